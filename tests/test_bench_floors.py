"""bench.floors: the transport's crowd, the stored ack's crowd and the SDK's own CPU per
model call, each against real parts (the raw echo and store servers in their own
processes; the official SDK in a child process, posting to the fake LLM server on
127.0.0.1), and how bench.turn_profile prints them."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from bench._servers import STORE_TABLE
from bench._servers import raw_socket
from bench._servers import server_process
from bench.floors import CHAT_FRAME
from bench.floors import WARM_UP
from bench.floors import echo_crowd
from bench.floors import sdk_call_cpu
from bench.floors import store_crowd
from bench.turn_profile import TurnFigures
from bench.turn_profile import report
from tests.fakes.llm_server import ErrorReply
from tests.fakes.llm_server import fake_llm_server
from tests.fakes.llm_server import reply


def test_echo_crowd_times_every_frame_of_every_burst() -> None:
    figures = echo_crowd(count=5, bursts=2, idle_samples=30)
    assert len(figures.idle) == 30
    assert len(figures.crowd) == 10  # every connection answered, in both bursts
    assert all(sample > 0 for sample in figures.idle + figures.crowd)
    assert figures.crowd_p99 == max(figures.crowd)  # the p99 of ten is the slowest
    assert figures.ratio == pytest.approx(figures.crowd_p99 / figures.idle_p99)


def test_store_crowd_times_every_frame_of_every_burst() -> None:
    figures = store_crowd(count=4, bursts=2, idle_samples=20)
    assert len(figures.idle) == 20
    assert len(figures.crowd) == 8
    assert all(sample > 0 for sample in figures.idle + figures.crowd)
    assert figures.crowd_p99 == max(figures.crowd)


@pytest.mark.parametrize("measure", [echo_crowd, store_crowd])
@pytest.mark.parametrize(
    "arguments",
    [
        {"count": 0, "bursts": 1},
        {"count": 3, "bursts": 0},
        {"count": 3, "bursts": 1, "idle_samples": 0},
    ],
)
def test_a_crowd_refuses_an_empty_measure(measure: Any, arguments: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        measure(**arguments)


async def _exchange(url: str, frames: list[str | bytes]) -> list[dict[str, Any]]:
    async with raw_socket(url) as ws:
        answers = []
        for frame in frames:
            await ws.send(frame)  # type: ignore[attr-defined]
            answers.append(json.loads(await ws.recv()))  # type: ignore[attr-defined]
        return answers


def test_the_store_server_answers_each_request_once_it_is_stored(tmp_path: Path) -> None:
    frames = [CHAT_FRAME.replace('"id": "x"', f'"id": "r{i}"') for i in range(3)]
    with server_process("store", str(tmp_path)) as url:
        answers = asyncio.run(_exchange(url, list(frames)))
    assert [a["id"] for a in answers] == ["r0", "r1", "r2"]
    assert all(a["ok"] and a["payload"] == {"status": "started"} for a in answers)
    with sqlite3.connect(tmp_path / "floor.db") as db:
        rows = db.execute(f"SELECT id, frame FROM {STORE_TABLE} ORDER BY rowid").fetchall()
    assert rows == [(f"r{i}", frame) for i, frame in enumerate(frames)]  # kept whole


def test_the_store_server_refuses_what_is_not_a_request(tmp_path: Path) -> None:
    bad: list[str | bytes] = ["not json", "[1, 2]", '{"no": "id"}', b'{"id": "binary"}']
    with server_process("store", str(tmp_path)) as url:
        answers = asyncio.run(_exchange(url, [*bad, CHAT_FRAME]))
    assert [a["ok"] for a in answers] == [False, False, False, False, True]
    assert all("a JSON object with an id" in a["error"]["message"] for a in answers[:4])
    with sqlite3.connect(tmp_path / "floor.db") as db:
        count = db.execute(f"SELECT COUNT(*) FROM {STORE_TABLE}").fetchone()[0]
    assert count == 1  # only the request was stored


def test_sdk_calls_post_the_body_given_and_read_the_stream() -> None:
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with fake_llm_server() as llm:
        llm.enqueue(*(reply("Hello", " there.") for _ in range(WARM_UP + 3)))
        cpu = sdk_call_cpu(llm.openai_base_url, json.dumps(body).encode(), calls=3)
        assert cpu > 0  # seconds of CPU per call (no upper bound: the machine may be loaded)
        assert llm.pending == 0  # every scripted reply was asked for
        assert len(llm.requests) == WARM_UP + 3
        assert all(r.path.endswith("/chat/completions") for r in llm.requests)
        assert all(r.body == body for r in llm.requests)


def test_sdk_calls_that_fail_say_so() -> None:
    with fake_llm_server() as llm:
        llm.enqueue(ErrorReply(401, "bad key"))
        with pytest.raises(RuntimeError, match="failed: AuthenticationError"):
            sdk_call_cpu(llm.openai_base_url, b"{}", calls=1)


def test_sdk_calls_refuse_zero() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        sdk_call_cpu("http://127.0.0.1:9/v1", b"{}", calls=0)


def test_the_turn_report_shows_the_sdk_part(capsys: pytest.CaptureFixture[str]) -> None:
    figures = TurnFigures(turns=[0.010] * 40, config_get=0.0003, sdk_call=0.003)
    report(figures, watchers=2)
    out = capsys.readouterr().out
    assert "33.3x" in out  # the whole turn against a config.get
    assert "10.0x a config.get" in out  # the SDK's call
    assert "turn without it / config.get   23.3x" in out
    assert out.rstrip().endswith("FAIL")
    report(TurnFigures(turns=[0.010] * 40, config_get=0.0003), watchers=2)
    assert "SDK" not in capsys.readouterr().out  # not measured, not printed
