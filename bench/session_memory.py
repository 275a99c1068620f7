"""Session memory: a gateway's resident memory after using many sessions with sizeable
histories, this working tree against a git revision, in one run.

    python -m bench.session_memory [REV] [-m 300] [--messages 20] [--chars 4000]

REV (default main) is checked out into a temporary git worktree. Each side gets a
database holding the same `m` sessions of `messages` messages (half of them tool results
of `chars` characters), then its own gateway process. Printed per side: the gateway's
resident memory (VmRSS, from /proc) right after start (the baseline), after one use of
every session (`session.compact` keeping everything: it loads the history and changes
nothing), and after `session.get` on `m` keys that were never used; each with its growth
over the baseline, and the peak (VmHWM). Linux only (reads /proc).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import uuid
from pathlib import Path
from typing import Any

from bench._servers import gateway_child
from bench.ab import HERE
from bench.ab import worktree

TIME_LIMIT_SECONDS = 300.0


def memory_kb(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak) of process `pid`, in kB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0])
    return fields


def session_key(i: int) -> str:
    return f"agent:main:bench{i}"


def history(messages: int, chars: int, now: int) -> list[dict[str, Any]]:
    """A run's worth of tool calls and results, `messages` long."""
    out: list[dict[str, Any]] = [
        {"role": "user", "content": "look around", "timestamp": now, "runId": "bench"}
    ]
    while len(out) < messages:
        call_id = f"call_{uuid.uuid4().hex[:12]}"
        read = {"type": "toolCall", "id": call_id, "name": "n1__Read", "arguments": {"path": "f"}}
        out.append({"role": "assistant", "content": [read], "provider": "fake", "model": "fake",
                    "stopReason": "toolUse", "timestamp": now})  # fmt: skip
        body = (uuid.uuid4().hex * (chars // 32 + 1))[:chars]  # not compressible away
        out.append({"role": "toolResult", "toolCallId": call_id, "toolName": "n1__Read",
                    "content": [{"type": "text", "text": body}], "isError": False,
                    "timestamp": now})  # fmt: skip
    return out[:messages]


async def fill(db_path: Path, sessions: int, messages: int, chars: int) -> None:
    """Store `sessions` sessions of `messages` messages in a new database."""
    from gsv_core.storage.db import Database
    from gsv_core.storage.sessions import SessionRecord
    from gsv_core.storage.sessions import SessionStore

    db = await Database.open(db_path)
    store = SessionStore(db)
    now = 1_700_000_000_000
    try:
        for i in range(sessions):
            record = SessionRecord(session_key(i), str(uuid.uuid4()), "main", "chat",
                                   now, now, now)  # fmt: skip
            await store.save(record)
            await store.append(record, history(messages, chars, now))
    finally:
        await db.close()


async def measure(
    pid: int, url: str, token: str, sessions: int
) -> list[tuple[str, dict[str, int]]]:
    from gsv_core.client import GatewayClient

    points = [("start (baseline)", memory_kb(pid))]
    async with GatewayClient(url, token=token) as client:
        for i in range(sessions):
            params = {"sessionKey": session_key(i), "keepMessages": 100_000}
            assert (await client.call("session.compact", params))["trimmedMessages"] == 0
        points.append((f"{sessions} sessions used", memory_kb(pid)))
        for i in range(sessions):
            await client.call("session.get", {"sessionKey": f"agent:main:typo{i}"})
        points.append((f"+ {sessions} unknown keys read", memory_kb(pid)))
    return points


def side(tree: Path, sessions: int, messages: int, chars: int) -> list[tuple[str, dict[str, int]]]:
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(fill(Path(tmp) / "gsv.db", sessions, messages, chars))
        with gateway_child(tmp, tree=tree) as (pid, url, token):

            async def bounded() -> list[tuple[str, dict[str, int]]]:
                async with asyncio.timeout(TIME_LIMIT_SECONDS):
                    return await measure(pid, url, token, sessions)

            return asyncio.run(bounded())


def report(name: str, points: list[tuple[str, dict[str, int]]]) -> None:
    base = points[0][1]["VmRSS"]
    print(f"{name}:")
    for label, kb in points:
        rss, growth, peak = kb["VmRSS"] / 1024, (kb["VmRSS"] - base) / 1024, kb["VmHWM"] / 1024
        print(f"  {label:<32} RSS {rss:7.1f} MB  (+{growth:6.1f} MB)  peak {peak:7.1f} MB")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", nargs="?", default="main")
    parser.add_argument("-m", type=int, default=300, help="sessions (at most 2000)")
    parser.add_argument("--messages", type=int, default=20, help="per session (at most 200)")
    parser.add_argument("--chars", type=int, default=4000, help="per tool result (<= 100000)")
    args = parser.parse_args(argv)
    sessions = max(1, min(args.m, 2000))
    messages, chars = max(2, min(args.messages, 200)), max(1, min(args.chars, 100_000))
    stored = sessions * (messages // 2) * chars / 1e6
    print(f"{sessions} sessions x {messages} messages, tool results of {chars} characters "
          f"(about {stored:.0f} MB of text stored)")  # fmt: skip
    with worktree(args.rev) as base:
        report(args.rev, side(base, sessions, messages, chars))
    report("working tree", side(HERE, sessions, messages, chars))


if __name__ == "__main__":
    main()
