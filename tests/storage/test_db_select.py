"""Database.select / select_one: one query, its rows converted in the reader thread;
Database.execute: one statement, committed by the writer."""

from __future__ import annotations

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
