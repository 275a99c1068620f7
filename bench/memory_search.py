"""Memory search: the FTS5 index over many sessions and notes, as the gateway builds and
queries it (gsv_core/memory, docs/memory.md).

    python -m bench.memory_search [--sessions 2000] [--messages 100000] [--notes 500] [-r 5]

Writes a database holding `sessions` sessions with `messages` messages between them
(sentences of 10-60 common words, times spread over a year) and a workspace of `notes`
notes under memory/, then plants the answers of the 50 questions in
bench/memory_questions.json: each in one old message (among the first of its session,
in the first month); every fifth of those sessions is archived (its history only in an
archive file, as after a reset). Around each answer sit 40 distractor messages holding
one of its question's words each. Then it times the full build (`reindex`, as an older
install's first start runs it), reads the index's size, and asks every question `r`
times through MemoryService.search (notes checked for changes first, as every search
does) with BM25 alone, the top 5 kept. Printed: build time, index size, query latency
p50 and p99, recall@5 (the share of questions whose answer message is among the 5),
against the targets p50 < 20 ms and recall@5 >= 0.9. Sizes are bounded and the whole run
stops after TIME_LIMIT_SECONDS.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import random
import re
import sqlite3
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.rpc_latency import percentile
from gsv_core.memory.query import STOPWORDS
from gsv_core.memory.query import query_terms
from gsv_core.memory.search import MemoryScope
from gsv_core.memory.search import SearchRequest
from gsv_core.memory.service import MemoryService
from gsv_core.storage.db import Database
from gsv_core.workspace.backend import FilesystemBackend

QUESTIONS = Path(__file__).with_name("memory_questions.json")
TIME_LIMIT_SECONDS = 900.0
DISTRACTORS = 40  # messages per question holding one of its words
ARCHIVE_EVERY = 5  # every fifth answer's session is archived
YEAR_MS = 365 * 86_400_000
START_MS = 1_735_689_600_000  # 2025-01-01
TARGET_P50_MS, TARGET_RECALL = 20.0, 0.9
_FILLER_TEXT = """
about above across after again against along also always among another answer around
asked away back because become been before began behind being below better between big
both bring brought build called came can car change children city close come company
could country course cut day days different does done door down during each early earth
end enough even evening every example eyes face fact family far feel feet few field find
first follow food form found four friend friends front full gave get girl give going gone
good got great green ground group grow half hand hard head hear heard help here high home
house however idea important inside just keep kept kind knew know land large last late
later learn least leave left less let life light like line list little live long look
looked made make making man many may mean might mind miss money more morning most mother
move much must near need never new next night nothing notice now number often old once
only open order other our out over own page paper part people perhaps picture place plan
play point possible power problem put question quick quite rather read ready real really
reason remember rest right river road room round run said same saw say school sea second
see seem seemed seen sentence set several shall short should show side since small soon
sound space stand start state still stood stop story study such sun sure table take taken
talk tell than thing things think though thought three through time today together told
too took top toward town tree tried true try turn under until upon usually very voice
walk want warm watch water way week well went while white whole why will without woman
word words work world would write year years yet young
"""
FILLER = tuple(_FILLER_TEXT.split())
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Needle:
    question: str
    session_key: str
    index: int  # the answer's message index in its session (or archive)
    archived: bool


def sentence(rng: random.Random, extra: str = "") -> str:
    words = rng.choices(FILLER, k=rng.randint(10, 60))
    if extra:
        words.insert(rng.randrange(len(words) + 1), extra)
    return " ".join(words).capitalize() + "."


def session_key(i: int) -> str:
    return f"agent:main:dm:peer{i}"


def content_words(question: str) -> list[str]:
    return [w for w in _WORD.findall(question.lower()) if w not in STOPWORDS]


def plan(sessions: int, per_session: int, rng: random.Random) -> tuple[list[Needle], dict]:
    """Where each answer and distractor goes: needles, and (session, index) -> text."""
    questions = json.loads(QUESTIONS.read_text())
    needles, planted = [], {}
    spots = rng.sample(range(sessions), len(questions))
    for number, (entry, spot) in enumerate(zip(questions, spots, strict=True)):
        index = rng.randint(0, min(3, per_session - 1))
        planted[(spot, index)] = entry["answer"]
        archived = number % ARCHIVE_EVERY == 0
        needles.append(Needle(entry["question"], session_key(spot), index, archived))
        for _ in range(DISTRACTORS):
            where = (rng.randrange(sessions), rng.randrange(per_session))
            if where not in planted:
                planted[where] = rng.choice(content_words(entry["question"]))
    return needles, planted


def message(role: str, text: str, at: int) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": text}], "timestamp": at}


def history(spot: int, per_session: int, planted: dict, rng: random.Random) -> list[dict]:
    """A session's messages: the first month for its first ones, then the rest of a year."""
    first = START_MS + rng.randrange(30 * 86_400_000)
    out = []
    for index in range(per_session):
        at = first + index * (YEAR_MS // per_session)
        text = planted.get((spot, index), "")
        # an answer as said, or filler (maybe holding one distractor word)
        body = text if " " in text else sentence(rng, text)
        out.append(message("user" if index % 2 == 0 else "assistant", body, at))
    return out


def populate(path: Path, workspace: Path, args: argparse.Namespace) -> list[Needle]:
    """The database and the workspace, written directly (no index yet: an older install)."""
    rng = random.Random(38)
    per_session = max(1, args.messages // args.sessions)
    needles, planted = plan(args.sessions, per_session, rng)
    archived = {n.session_key for n in needles if n.archived}
    sessions_dir = workspace / "agents" / "main" / "sessions"
    sessions_dir.mkdir(parents=True)
    conn = sqlite3.connect(path)
    with conn:
        for spot in range(args.sessions):
            key, messages = session_key(spot), history(spot, per_session, planted, rng)
            if key in archived:
                lines = [{"meta": {"sessionKey": key}}, *messages]
                data = "\n".join(json.dumps(line) for line in lines).encode()
                (sessions_dir / f"{spot}.jsonl.gz").write_bytes(gzip.compress(data))
                continue
            conn.executemany(
                "INSERT INTO messages (session_key, idx, data) VALUES (?, ?, ?)",
                [(key, i, json.dumps(m)) for i, m in enumerate(messages)],
            )
    conn.close()
    notes = workspace / "agents" / "main" / "memory"
    notes.mkdir(parents=True)
    for number in range(args.notes):
        body = "\n\n".join(f"## {sentence(rng)[:30]}\n\n{sentence(rng)}" for _ in range(6))
        (notes / f"note-{number}.md").write_text(f"# Note {number}\n\n{body}\n")
    return needles


def found(needle: Needle, hits: list[dict[str, Any]]) -> bool:
    return any(h.get("sessionKey") == needle.session_key and h.get("messageIndex") == needle.index
               and h.get("archived") == needle.archived for h in hits)  # fmt: skip


async def measure(path: Path, workspace: Path, needles: list[Needle], rounds: int) -> dict:
    db = await Database.open(path)  # migrates: the index tables, empty
    service = MemoryService(db, FilesystemBackend(workspace))
    try:
        start = time.perf_counter()
        await service.reindex()
        await service.wait_built()
        build = time.perf_counter() - start
        status = await service.status()
        everything, latencies, recalled = MemoryScope.everything(), [], 0
        for round_number in range(rounds):
            for needle in needles:
                request = SearchRequest(query_terms(needle.question), limit=5)
                start = time.perf_counter()
                hits = await service.search(request, everything)
                latencies.append(time.perf_counter() - start)
                recalled += round_number == 0 and found(needle, hits)
        return {"build": build, "status": status, "latencies": latencies,
                "recall": recalled / len(needles)}  # fmt: skip
    finally:
        await service.close()
        await db.close()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--notes", type=int, default=500)
    parser.add_argument("-r", "--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    # bounded: enough sessions to hide 50 answers in, never more than a big install holds
    args.sessions = max(60, min(args.sessions, 20_000))
    args.messages = max(args.sessions, min(args.messages, 1_000_000))
    args.notes, args.rounds = max(0, min(args.notes, 10_000)), max(1, min(args.rounds, 50))
    with tempfile.TemporaryDirectory() as tmp:
        path, workspace = Path(tmp) / "gsv.db", Path(tmp) / "workspace"
        asyncio.run(_migrated(path))
        start = time.perf_counter()
        needles = populate(path, workspace, args)
        written = time.perf_counter() - start
        result = asyncio.run(_bounded(measure(path, workspace, needles, args.rounds)))
        file_size = path.stat().st_size
    p50, p99 = percentile(result["latencies"], 0.5), percentile(result["latencies"], 0.99)
    status = result["status"]
    print(f"{args.sessions} sessions, {status['messages']:,} messages indexed "
          f"({status['archivedMessages']:,} from archives), {status['notes']} notes "
          f"({status['noteChunks']:,} chunks); data written in {written:.1f} s")  # fmt: skip
    print(f"index build      {result['build']:.1f} s")
    print(
        f"index size       {status['bytes'] / 1e6:.1f} MB (database file {file_size / 1e6:.1f} MB)"
    )
    searches = len(result["latencies"])
    print(f"query latency    p50 {p50 * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms "
          f"({searches} searches; target p50 < {TARGET_P50_MS:.0f} ms)")  # fmt: skip
    print(f"recall@5         {result['recall']:.2f} over {len(needles)} questions "
          f"(target >= {TARGET_RECALL})")  # fmt: skip
    return {"build_s": result["build"], "bytes": status["bytes"], "p50_ms": p50 * 1000,
            "p99_ms": p99 * 1000, "recall_at_5": result["recall"]}  # fmt: skip


async def _migrated(path: Path) -> None:
    db = await Database.open(path)
    await db.close()


async def _bounded(work: Any) -> Any:
    async with asyncio.timeout(TIME_LIMIT_SECONDS):
        return await work


if __name__ == "__main__":
    main()
