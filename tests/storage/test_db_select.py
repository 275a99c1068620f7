"""Database.select / select_one: one query, its rows converted in the reader thread;
Database.execute: one statement, committed by the writer."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from gsv_core.storage.db import Database


async def _db_with_rows(path: Path) -> Database:
    db = await Database.open(path)
    await db.write(
        lambda conn: conn.executemany(
            "INSERT INTO config_overrides (key, value, updated_at) VALUES (?, ?, 0)",
            [("b", '"two"'), ("a", '"one"')],
        )
    )
    return db


async def test_select_converts_every_row_in_query_order(tmp_path: Path) -> None:
    """select() returns each row through the converter, in the order the query gives."""
    db = await _db_with_rows(tmp_path / "gsv.db")
    try:
        rows = await db.select(
            lambda row: f"{row[0]}={row[1]}",
            "SELECT key, value FROM config_overrides ORDER BY key",
        )
    finally:
        await db.close()
    assert rows == ['a="one"', 'b="two"']


async def test_select_one_returns_the_row_or_none(tmp_path: Path) -> None:
    """select_one() converts the first row, and says None when the query finds none."""
    db = await _db_with_rows(tmp_path / "gsv.db")
    sql = "SELECT value FROM config_overrides WHERE key = ?"
    try:
        found = await db.select_one(lambda row: row[0], sql, ("b",))
        missing = await db.select_one(lambda row: row[0], sql, ("zzz",))
    finally:
        await db.close()
    assert found == '"two"'
    assert missing is None


async def test_execute_commits_one_statement_with_its_arguments(tmp_path: Path) -> None:
    """execute() runs one statement with its arguments; a read after it sees the change."""
    db = await _db_with_rows(tmp_path / "gsv.db")
    try:
        await db.execute("DELETE FROM config_overrides WHERE key = ?", ("a",))
        keys = await db.select(lambda row: row[0], "SELECT key FROM config_overrides")
    finally:
        await db.close()
    assert keys == ["b"]


async def test_reads_do_not_queue_behind_the_default_thread_pool(tmp_path: Path) -> None:
    """With asyncio's default pool full of work that waits (a crowd of runs reading their
    workspace files), a read still answers: the database has its own reader threads, so
    a message's session lookup, and its ack, never queue behind that work."""
    db = await _db_with_rows(tmp_path / "gsv.db")
    release = threading.Event()
    # more than the default pool's threads (min(32, cpus + 4)): some queue as well
    blockers = [asyncio.create_task(asyncio.to_thread(release.wait)) for _ in range(40)]
    try:
        await asyncio.sleep(0)
        sql = "SELECT value FROM config_overrides WHERE key = ?"
        assert await asyncio.wait_for(db.select_one(lambda row: row[0], sql, ("a",)), 30) == '"one"'
    finally:
        release.set()
        await asyncio.gather(*blockers)
        await db.close()
