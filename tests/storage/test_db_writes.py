"""Database.write: every job commits whole or not at all, alone or in a group commit (the
writer takes every job already waiting into one transaction, each behind a savepoint)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from gsv_core.storage.db import Database
from tests.waiting import WAIT
from tests.waiting import until

INSERT = "INSERT INTO config_overrides (key, value, updated_at) VALUES (?, '1', 0)"


def _insert_then_fail(key: str) -> Callable[[sqlite3.Connection], None]:
    def job(conn: sqlite3.Connection) -> None:
        conn.execute(INSERT, (key,))
        raise ValueError(f"job {key} failed after writing")

    return job


async def _keys(db: Database) -> list[str]:
    return await db.select(lambda row: row[0], "SELECT key FROM config_overrides ORDER BY key")


async def test_a_failing_job_alone_keeps_nothing_and_the_next_write_works(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "gsv.db")
    try:
        with pytest.raises(ValueError, match="job a failed"):
            await db.write(_insert_then_fail("a"))
        await db.execute(INSERT, ("b",))  # the writer is not left inside a transaction
        keys = await _keys(db)
    finally:
        await db.close()
    assert keys == ["b"]


async def test_a_failing_job_in_a_group_commit_does_not_sink_the_others(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "gsv.db")
    inside, release = threading.Event(), threading.Event()

    def hold(conn: sqlite3.Connection) -> None:
        inside.set()
        release.wait(WAIT)

    try:
        # the writer waits inside a first job while the next three queue up behind it:
        # they are committed together, as one batch
        blocker = asyncio.ensure_future(db.write(hold))
        await until(inside.is_set, "the writer inside the first job")
        writes = [
            asyncio.ensure_future(db.execute(INSERT, ("a",))),
            asyncio.ensure_future(db.write(_insert_then_fail("b"))),
            asyncio.ensure_future(db.execute(INSERT, ("c",))),
        ]
        await asyncio.sleep(0)  # each queues its write in its first step
        release.set()
        await blocker
        outcomes = await asyncio.gather(*writes, return_exceptions=True)
        keys = await _keys(db)
    finally:
        release.set()
        await db.close()
    assert outcomes[0] is None and outcomes[2] is None
    assert isinstance(outcomes[1], ValueError)
    assert keys == ["a", "c"]
