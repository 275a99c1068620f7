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


async def test_each_waiter_of_a_group_commit_hears_its_own_result_even_if_one_left(
    tmp_path: Path,
) -> None:
    db = await Database.open(tmp_path / "gsv.db")
    inside, release = threading.Event(), threading.Event()

    def hold(conn: sqlite3.Connection) -> None:
        inside.set()
        release.wait(WAIT)

    def insert(key: str) -> Callable[[sqlite3.Connection], str]:
        def job(conn: sqlite3.Connection) -> str:
            conn.execute(INSERT, (key,))
            return f"stored {key}"

        return job

    try:
        blocker = asyncio.ensure_future(db.write(hold))
        await until(inside.is_set, "the writer inside the first job")
        writes = {key: asyncio.ensure_future(db.write(insert(key))) for key in "abcd"}
        await asyncio.sleep(0)  # each queues its write in its first step
        writes["b"].cancel()  # its caller stopped waiting: the write still commits
        release.set()
        await blocker
        outcomes = await asyncio.gather(*writes.values(), return_exceptions=True)
        keys = await _keys(db)
    finally:
        release.set()
        await db.close()
    assert outcomes[0] == "stored a" and outcomes[2] == "stored c" and outcomes[3] == "stored d"
    assert isinstance(outcomes[1], asyncio.CancelledError)
    assert keys == ["a", "b", "c", "d"]


async def test_a_write_whose_event_loop_closed_before_the_commit_does_not_stop_the_writer(
    tmp_path: Path,
) -> None:
    db = await Database.open(tmp_path / "gsv.db")
    inside, release = threading.Event(), threading.Event()

    def hold(conn: sqlite3.Connection) -> None:
        inside.set()
        release.wait(WAIT)

    async def queue_and_leave() -> None:
        # a loop in another thread queues a write and ends before it commits
        write = asyncio.ensure_future(db.execute(INSERT, ("gone",)))
        await asyncio.sleep(0)
        write.cancel()

    try:
        blocker = asyncio.ensure_future(db.write(hold))
        await until(inside.is_set, "the writer inside the first job")
        await asyncio.to_thread(asyncio.run, queue_and_leave())
        release.set()
        await blocker
        await db.execute(INSERT, ("after",))  # the writer is still there
        keys = await _keys(db)
    finally:
        release.set()
        await db.close()
    assert keys == ["after", "gone"]


async def test_the_waiters_of_a_group_commit_resume_one_a_pass_of_the_loop(
    tmp_path: Path,
) -> None:
    """A hundred runs' writes committed together must not all resume in one pass: the
    loop would answer no request until every one of them had taken its step."""
    db = await Database.open(tmp_path / "gsv.db")
    inside, release = threading.Event(), threading.Event()
    passes = 0

    async def tick() -> None:  # counts the passes of the loop
        nonlocal passes
        while True:
            passes += 1
            await asyncio.sleep(0)

    def hold(conn: sqlite3.Connection) -> None:
        inside.set()
        release.wait(WAIT)

    async def write(key: str) -> int:
        await db.execute(INSERT, (key,))
        return passes  # the pass it resumed in

    ticker = asyncio.ensure_future(tick())
    try:
        blocker = asyncio.ensure_future(db.write(hold))
        await until(inside.is_set, "the writer inside the first job")
        writes = [asyncio.ensure_future(write(key)) for key in "abcdef"]
        await asyncio.sleep(0)  # each queues its write in its first step
        release.set()
        await blocker
        resumed = await asyncio.gather(*writes)
    finally:
        release.set()
        ticker.cancel()
        await db.close()
    assert resumed == sorted(resumed) and len(set(resumed)) == len(resumed)
