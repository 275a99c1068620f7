"""Database.when_quiet: a catch-up write runs in a transaction of its own after the writes
that were waiting (a crowd's acks go first), still runs under writes that never pause,
runs at close when due, and a failing one is logged without stopping the writer."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from pathlib import Path

import pytest

from gsv_core.storage.db import Database
from tests.waiting import WAIT
from tests.waiting import until

INSERT = "INSERT INTO config_overrides (key, value, updated_at) VALUES (?, '1', 0)"


class CatchUp:
    """A catch-up write that notes when it ran, among the other writes' marks."""

    def __init__(self, order: list[str]) -> None:
        self.order = order
        self.due = False
        self.runs = 0
        self.in_transaction: list[bool] = []
        self.threads: list[str] = []

    def is_due(self) -> bool:
        return self.due

    def job(self, conn: sqlite3.Connection) -> None:
        self.due = False
        self.runs += 1
        self.in_transaction.append(conn.in_transaction)
        self.threads.append(threading.current_thread().name)
        conn.execute(INSERT, (f"catch-up-{self.runs}",))
        self.order.append("catch-up")


async def _opened(tmp_path: Path) -> tuple[Database, list[str], CatchUp]:
    """A database with a catch-up write registered, and the order writes ran in."""
    db = await Database.open(tmp_path / "gsv.db")
    order: list[str] = []
    catch_up = CatchUp(order)
    db.when_quiet(catch_up.job, catch_up.is_due)
    return db, order, catch_up


def _mark(order: list[str], name: str, catch_up: CatchUp | None = None):  # type: ignore[no-untyped-def]
    def job(conn: sqlite3.Connection) -> None:
        conn.execute(INSERT, (name,))
        order.append(name)
        if catch_up is not None:
            catch_up.due = True  # as an appended message marks the index behind

    return job


async def test_it_runs_after_the_write_that_made_it_due_in_its_own_transaction(
    tmp_path: Path,
) -> None:
    db, order, catch_up = await _opened(tmp_path)
    try:
        await db.write(_mark(order, "message", catch_up))
        await until(lambda: catch_up.runs == 1, "the catch-up write")
        keys = await db.select(lambda row: row[0], "SELECT key FROM config_overrides")
        await db.write(_mark(order, "another"))  # not due: it does not run again
    finally:
        await db.close()
    assert order == ["message", "catch-up", "another"]
    assert sorted(keys) == ["catch-up-1", "message"]  # committed, nobody awaiting it
    assert catch_up.in_transaction == [True]
    assert catch_up.threads == ["gsv-db-writer"]
    assert catch_up.runs == 1


async def test_writes_already_waiting_commit_before_it(tmp_path: Path) -> None:
    """The acks of a crowd: writes queued while the writer worked go first."""
    db, order, catch_up = await _opened(tmp_path)
    inside, release = threading.Event(), threading.Event()

    def first(conn: sqlite3.Connection) -> None:
        _mark(order, "first", catch_up)(conn)
        inside.set()
        release.wait(WAIT)

    try:
        blocker = asyncio.ensure_future(db.write(first))
        await until(inside.is_set, "the writer inside the first job")
        waiting = [asyncio.ensure_future(db.write(_mark(order, f"ack-{i}"))) for i in range(3)]
        await asyncio.sleep(0)  # queued behind the first job
        release.set()
        await asyncio.gather(blocker, *waiting)
        await until(lambda: catch_up.runs == 1, "the catch-up write")
    finally:
        release.set()
        await db.close()
    assert order == ["first", "ack-0", "ack-1", "ack-2", "catch-up"]


async def test_writes_that_never_pause_do_not_hold_it_off(tmp_path: Path) -> None:
    """Each write queues the next while it runs, so the queue is never empty after a
    commit: the catch-up still runs (after QUIET_LIMIT), long before the stream ends."""
    db, order, catch_up = await _opened(tmp_path)
    loop = asyncio.get_running_loop()
    pending: list[asyncio.Future[None]] = []
    count = 2000  # x 2 ms: about 4 s of writes, 8x QUIET_LIMIT
    stop = threading.Event()

    def submit(index: int) -> None:
        if index < count and not stop.is_set():
            pending.append(asyncio.ensure_future(db.write(step(index))))

    def step(index: int):  # type: ignore[no-untyped-def]
        def job(conn: sqlite3.Connection) -> None:
            loop.call_soon_threadsafe(submit, index + 1)  # queued while this one runs
            _mark(order, f"w{index}", catch_up if index == 0 else None)(conn)
            stop.wait(0.002)

        return job

    try:
        submit(0)
        await until(lambda: catch_up.runs == 1, "the catch-up write")
        stop.set()  # end the stream early: what it proved is in `order`
        await until(lambda: all(f.done() for f in pending) and len(pending) > 0, "the stream")
        await asyncio.gather(*pending)
    finally:
        stop.set()
        await db.close()
    at = order.index("catch-up")
    assert any(name.startswith("w") for name in order[at + 1 :])  # the stream went on after


async def test_it_runs_at_close_when_still_due(tmp_path: Path) -> None:
    db, order, catch_up = await _opened(tmp_path)
    inside, release = threading.Event(), threading.Event()

    def hold(conn: sqlite3.Connection) -> None:
        inside.set()
        release.wait(WAIT)

    blocker = asyncio.ensure_future(db.write(hold))
    await until(inside.is_set, "the writer inside the first job")
    last = asyncio.ensure_future(db.write(_mark(order, "last", catch_up)))
    await asyncio.sleep(0)
    closing = asyncio.ensure_future(db.close())
    await asyncio.sleep(0)
    release.set()
    await asyncio.gather(blocker, last, closing)
    assert order == ["last", "catch-up"]


async def test_a_failing_catch_up_is_logged_and_the_writer_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = await Database.open(tmp_path / "gsv.db")
    due = [False]
    tries: list[int] = []

    def broken(conn: sqlite3.Connection) -> None:
        tries.append(1)
        conn.execute(INSERT, ("half-done",))
        raise RuntimeError("the index is broken")

    db.when_quiet(broken, lambda: due[0])

    def make_due(conn: sqlite3.Connection) -> None:
        conn.execute(INSERT, ("message",))
        due[0] = True

    try:
        with caplog.at_level(logging.ERROR, logger="gsv_core.storage.db"):
            await db.write(make_due)
            await until(lambda: len(tries) >= 1, "the catch-up write")
            due[0] = False
            await db.execute(INSERT, ("after",))  # the writer still writes
            keys = await db.select(lambda row: row[0], "SELECT key FROM config_overrides")
    finally:
        await db.close()
    assert sorted(keys) == ["after", "message"]  # what it wrote before failing is gone
    assert "catch-up write failed" in caplog.text
    assert "the index is broken" in caplog.text


async def test_committed_is_told_the_result_after_the_commit_only(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "gsv.db")
    due = [False]
    told: list[tuple[int, bool]] = []
    outcomes = iter([7, RuntimeError("no"), 9])

    def job(conn: sqlite3.Connection) -> int:
        due[0] = False
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def committed(result: int) -> None:
        # told in the writer thread once committed: no transaction is open any more
        told.append((result, threading.current_thread().name == "gsv-db-writer"))

    def make_due(conn: sqlite3.Connection) -> None:
        due[0] = True

    db.when_quiet(job, lambda: due[0], committed)
    try:
        for expected in (1, 1, 2):  # the failing run tells nothing
            await db.write(make_due)
            await until(lambda: not due[0], "the catch-up write")
            await db.write(lambda conn: None)  # after the catch-up's own commit
            assert len(told) == expected
    finally:
        await db.close()
    assert told == [(7, True), (9, True)]
