"""The usage ledger's rows: one per model call, summed by a grouping for reports and
pruned by age. A group's cost sums the calls with a known price; `unpricedCalls` says how
many had none (their cost is unknown, not zero), and a group of only those costs None."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from gsv_core.storage.db import Database

DAY_MS = 86_400_000


@dataclass(frozen=True)
class UsageRow:
    at: int
    agent_id: str
    session_key: str
    source: str
    provider: str
    model: str
    input: int
    output: int
    cache_read: int
    cache_write: int
    cost: float | None


# what a report groups by -> the SQL expression of the group's key (day: UTC date)
GROUPS = {
    "source": "source",
    "session": "session_key",
    "model": "provider || '/' || model",
    "day": "date(at / 1000, 'unixepoch')",
    "agent": "agent_id",
}

_SUMS = (
    "COUNT(*), SUM(input), SUM(output), SUM(cache_read), SUM(cache_write), "
    "SUM(cost), SUM(cost IS NULL)"
)


def insert_row(conn: sqlite3.Connection, row: UsageRow) -> None:
    """Add `row` in the writer's transaction (UsageStore.add, or beside the message that
    reports the call: usage/ledger.py)."""
    conn.execute(
        "INSERT INTO usage_ledger (at, agent_id, session_key, source, provider, model, "
        "input, output, cache_read, cache_write, cost) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (row.at, row.agent_id, row.session_key, row.source, row.provider, row.model,
         row.input, row.output, row.cache_read, row.cache_write, row.cost),
    )  # fmt: skip


class UsageStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, row: UsageRow) -> None:
        await self._db.write(lambda conn: insert_row(conn, row))

    async def summary(self, since: int, until: int, group: str) -> list[dict[str, Any]]:
        """Sums per group over `since <= at < until`, the costliest group first."""
        key = GROUPS[group]  # a fixed expression: `group` is checked by the caller
        query = (
            f"SELECT {key} AS name, {_SUMS} FROM usage_ledger WHERE at >= ? AND at < ? "
            "GROUP BY name ORDER BY SUM(cost) DESC, SUM(input) + SUM(output) DESC, name"
        )
        rows = await self._db.read(lambda c: c.execute(query, (since, until)).fetchall())
        if group == "day":
            rows.sort(key=lambda row: row[0])
        return [_group(row) for row in rows]

    async def spent_since(self, since: int, background_only: bool = False) -> float:
        """USD of the calls with a known price since `since` (ms); of background work only
        (`is_background`) when asked: summed per source, the few sums then picked in
        Python, so the rule is not written again in SQL."""
        query = (
            "SELECT source, COALESCE(SUM(cost), 0) FROM usage_ledger WHERE at >= ? GROUP BY source"
        )
        rows = await self._db.read(lambda c: c.execute(query, (since,)).fetchall())
        return float(sum(spent for source, spent in rows
                         if not background_only or is_background(source)))  # fmt: skip

    async def prune(self, before: int) -> int:
        """Delete rows older than `before` (ms); returns how many went."""
        return await self._db.write(
            lambda c: c.execute("DELETE FROM usage_ledger WHERE at < ?", (before,)).rowcount
        )


def _group(row: tuple[Any, ...]) -> dict[str, Any]:
    name, calls, input_, output, read, write, cost, unpriced = row
    return {
        "name": name,
        "calls": calls,
        "input": input_,
        "output": output,
        "cacheRead": read,
        "cacheWrite": write,
        "costUsd": None if unpriced == calls else round(cost or 0.0, 6),
        "unpricedCalls": unpriced,
    }


BACKGROUND_PREFIXES = ("cron:", "sessionSend@")
BACKGROUND_NAMES = ("heartbeat", "memory")  # memory: embedding notes and messages
ON_BEHALF = "compaction@"  # a call made inside a run, counted as the run's


def is_background(source: str) -> bool:
    """The one rule of background work (the budget's check before a run, and the spend
    it sums): cron jobs, heartbeats, sessions they message (`sessionSend@<their
    source>`), and compaction inside any of their runs (`compaction@<source>`)."""
    source = source.removeprefix(ON_BEHALF)
    return source.startswith(BACKGROUND_PREFIXES) or source in BACKGROUND_NAMES
