"""rpc.deadlines: many call deadlines on one timer, on a real event loop: each fires
once, not before its time (less the uvloop timer slack), never after it is forgotten."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest

from gsv_core.rpc.deadlines import EARLY, Deadlines


def recorder(
    loop: asyncio.AbstractEventLoop,
) -> tuple[list[tuple[str, float]], Callable[[str], None]]:
    fired: list[tuple[str, float]] = []
    return fired, lambda name: fired.append((name, loop.time()))


async def test_each_deadline_fires_once_in_order_and_not_early() -> None:
    loop = asyncio.get_running_loop()
    deadlines = Deadlines()
    fired, note = recorder(loop)
    start = loop.time()
    # added out of order: a later deadline first, then earlier ones re-arm the timer
    for name, seconds in [("c", 0.15), ("a", 0.05), ("b", 0.10)]:
        deadlines.add(name, seconds, note, name)
    await asyncio.sleep(0.3)
    assert [name for name, _ in fired] == ["a", "b", "c"]
    for (name, at), seconds in zip(fired, [0.05, 0.10, 0.15], strict=True):
        assert at >= start + seconds - EARLY, name
    assert len(deadlines) == 0


async def test_a_discarded_deadline_never_fires_and_the_rest_still_do() -> None:
    loop = asyncio.get_running_loop()
    deadlines = Deadlines()
    fired, note = recorder(loop)
    deadlines.add("first", 0.03, note, "first")  # the timer is armed for this one
    deadlines.add("second", 0.08, note, "second")
    deadlines.discard("first")
    deadlines.discard("never-added")  # forgetting an unknown key is harmless
    await asyncio.sleep(0.2)
    assert [name for name, _ in fired] == ["second"]


async def test_adding_a_key_again_replaces_its_deadline() -> None:
    loop = asyncio.get_running_loop()
    deadlines = Deadlines()
    fired, note = recorder(loop)
    deadlines.add("k", 0.03, note, "old")
    deadlines.add("k", 0.10, note, "new")
    await asyncio.sleep(0.06)
    assert fired == []  # the first deadline went stale
    await asyncio.sleep(0.1)
    assert [name for name, _ in fired] == ["new"]


async def test_forgotten_deadlines_are_swept_so_the_heap_stays_small() -> None:
    """A stream of calls answered in time leaves no pile of dead entries behind."""
    deadlines = Deadlines()
    for n in range(5000):
        deadlines.add(n, 30.0, pytest.fail, "must not fire")
        deadlines.discard(n)
    assert len(deadlines) == 0
    assert len(deadlines._heap) <= 2 * 1 + 64 + 1
    deadlines.close()


async def test_a_failing_callback_is_reported_and_the_others_still_fire(
    caplog: pytest.LogCaptureFixture,
) -> None:
    loop = asyncio.get_running_loop()
    deadlines = Deadlines()
    fired, note = recorder(loop)

    def broken() -> None:
        raise RuntimeError("broken callback")

    deadlines.add("broken", 0.02, broken)
    deadlines.add("fine", 0.02, note, "fine")
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        await asyncio.sleep(0.1)
    assert [name for name, _ in fired] == ["fine"]
    assert "a deadline's callback failed" in caplog.text
    assert "broken callback" in caplog.text


async def test_a_callback_adding_a_later_deadline_keeps_earlier_ones_on_time() -> None:
    """An expiry that starts a new call (with a far deadline) must not push back the
    timer past deadlines already waiting."""
    loop = asyncio.get_running_loop()
    deadlines = Deadlines()
    fired, note = recorder(loop)

    def retry() -> None:
        note("retry")
        deadlines.add("far", 10.0, note, "far")

    deadlines.add("retry", 0.02, retry)
    deadlines.add("soon", 0.06, note, "soon")
    await asyncio.sleep(0.15)
    assert [name for name, _ in fired] == ["retry", "soon"]
    deadlines.close()


async def test_close_stops_everything() -> None:
    loop = asyncio.get_running_loop()
    deadlines = Deadlines()
    fired, note = recorder(loop)
    deadlines.add("x", 0.02, note, "x")
    deadlines.close()
    await asyncio.sleep(0.06)
    assert fired == [] and len(deadlines) == 0


def test_a_deadlines_object_moves_to_a_new_loop_after_its_old_one_closed() -> None:
    """A client used again under a new asyncio.run(): its old loop's deadlines are gone,
    new ones fire on the new loop."""
    deadlines = Deadlines()
    fired: list[Any] = []

    async def first() -> None:
        deadlines.add("stale", 30.0, fired.append, "stale")

    async def second() -> None:
        deadlines.add("fresh", 0.01, fired.append, "fresh")
        await asyncio.sleep(0.05)

    asyncio.run(first())
    asyncio.run(second())
    assert fired == ["fresh"]


def test_deadlines_on_uvloop_fire_in_order_without_spinning() -> None:
    """uvloop's timers have millisecond resolution: a deadline the timer reaches a
    little early still fires (not re-armed over and over for the sliver left)."""
    uvloop = pytest.importorskip("uvloop")  # optional extra: gsv runs on it when present
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(test_each_deadline_fires_once_in_order_and_not_early())
        deadlines = Deadlines()
        arms: list[float] = []
        original = deadlines._arm

        def counting_arm(loop: asyncio.AbstractEventLoop, when: float) -> None:
            arms.append(when)
            original(loop, when)

        deadlines._arm = counting_arm  # type: ignore[method-assign]

        async def one() -> None:
            fired: list[str] = []
            deadlines.add("x", 0.0105, fired.append, "x")
            await asyncio.sleep(0.05)
            assert fired == ["x"]

        runner.run(one())
        assert len(arms) == 1  # armed once, fired once
