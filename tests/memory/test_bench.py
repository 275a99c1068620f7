"""bench.memory_search runs to the end on a small corpus and finds the planted answers
(its timings are for people to read; only the recall is held here)."""

from __future__ import annotations

import json

from bench.memory_search import QUESTIONS
from bench.memory_search import main


def test_the_bench_runs_small_and_recalls_the_answers(capsys: object) -> None:
    """60 sessions, 3,000 messages, 5 notes: every number printed, recall@5 at target."""
    result = main(["--sessions", "60", "--messages", "3000", "--notes", "5", "-r", "1"])
    assert len(json.loads(QUESTIONS.read_text())) == 50
    assert set(result) == {"build_s", "bytes", "p50_ms", "p99_ms", "recall_at_5"}
    assert result["recall_at_5"] >= 0.9
