"""The WAL stays bounded however long the gateway writes: a commit that leaves it past the
limit truncates it, and a pause in writes truncates it to nothing. Sizes, not times."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from gsv_core.storage.db import Checkpoints
from gsv_core.storage.db import Database
from gsv_core.storage.db import file_sizes
from tests.waiting import until

ROW = 64 * 1024  # bytes per write: many pages per commit, as a long tool result makes
LIMIT = 1024 * 1024


def _put(key: str, size: int = ROW) -> object:
    def write(conn: sqlite3.Connection) -> None:
        conn.execute(
            "INSERT OR REPLACE INTO config_overrides (key, value, updated_at) VALUES (?, ?, 0)",
            (key, "x" * size),
        )

    return write


async def test_the_wal_never_grows_far_past_its_limit_under_constant_writes(
    tmp_path: Path,
) -> None:
    """400 commits of 64 KB (25 MB, 25x the limit) with reads between them and no pause:
    after every commit the WAL is within one commit of the 1 MB limit (SQLite's own
    checkpoint alone lets it reach 4 MB), and every row is in the database after."""
    path = tmp_path / "gsv.db"
    checkpoints = Checkpoints(idle_seconds=3600, wal_limit=LIMIT, journal_limit=LIMIT // 2)
    db = await Database.open(path, checkpoints)
    largest = 0
    try:
        for i in range(400):
            await db.write(_put(f"k{i % 20}"))  # type: ignore[arg-type]
            await db.select(lambda row: row[0], "SELECT count(*) FROM config_overrides")
            largest = max(largest, file_sizes(path).wal)
        assert db.checkpoint_count >= 10
    finally:
        await db.close()
    assert 0 < largest <= LIMIT + 4 * ROW
    conn = sqlite3.connect(path)
    try:
        found = conn.execute("SELECT count(*), min(length(value)) FROM config_overrides")
        assert found.fetchone() == (20, ROW)
    finally:
        conn.close()


async def test_a_pause_in_writes_truncates_the_wal_to_nothing(tmp_path: Path) -> None:
    """Writes, then a pause: the WAL file is truncated to zero bytes; the next write grows
    it again and the next pause empties it again."""
    path = tmp_path / "gsv.db"
    db = await Database.open(path, Checkpoints(idle_seconds=0.05))
    try:
        done = 0
        for _ in range(2):
            for i in range(10):
                await db.write(_put(f"k{i}"))  # type: ignore[arg-type]
            # the file is empty a moment before the writer counts its checkpoint: wait
            # for both (a pause mid-round may have truncated too)
            await until(
                lambda before=done: file_sizes(path).wal == 0 and db.checkpoint_count > before,
                "the WAL truncated to nothing",
            )
            done = db.checkpoint_count
        sizes = db.sizes()
        assert sizes.wal == 0 and sizes.database >= 10 * ROW
    finally:
        await db.close()


async def test_the_journal_size_limit_is_set_on_the_writer(tmp_path: Path) -> None:
    """SQLite itself cuts the WAL file to `journal_limit` whenever the WAL starts over."""
    db = await Database.open(tmp_path / "gsv.db", Checkpoints(journal_limit=123456))
    try:
        found = await db.write(lambda conn: conn.execute("PRAGMA journal_size_limit").fetchone())
        assert found == (123456,)
    finally:
        await db.close()
