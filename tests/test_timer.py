"""Timer: the tick/sleep/wake task behind cron and heartbeats, and seconds_until."""

from __future__ import annotations

import asyncio

from gsv_core.timer import MAX_SLEEP_SECONDS
from gsv_core.timer import Timer
from gsv_core.timer import seconds_until


def test_seconds_until_counts_to_the_earliest_future_time() -> None:
    """Past times are left out; the earliest future one sets the wait, capped at a minute."""
    assert seconds_until([900, 5_000, 3_000], now_ms=1_000) == 2.0
    assert seconds_until([1_000 + 3_600_000], now_ms=1_000) == MAX_SLEEP_SECONDS
    assert seconds_until([500, 1_000], now_ms=1_000) == MAX_SLEEP_SECONDS
    assert seconds_until([], now_ms=1_000) == MAX_SLEEP_SECONDS


async def test_a_timer_outlives_a_failing_tick_and_ticks_again_when_woken() -> None:
    """A tick that raises does not end the timer: wake() makes it tick again at once."""
    ticks: asyncio.Queue[int] = asyncio.Queue()
    count = 0

    def tick() -> float:
        nonlocal count
        count += 1
        ticks.put_nowait(count)
        if count == 1:
            raise RuntimeError("a bad tick")
        return MAX_SLEEP_SECONDS

    timer = Timer("test", tick)
    timer.start()
    assert timer.running
    assert await ticks.get() == 1  # the first tick, which raised
    timer.wake()
    assert await ticks.get() == 2  # ticked again, without waiting out the sleep
    await timer.stop()
    assert not timer.running


async def test_stopping_a_timer_cancels_the_work_it_is_given() -> None:
    """stop(work) cancels the timer's task and the given tasks, and waits for them."""
    timer = Timer("test", lambda: MAX_SLEEP_SECONDS)
    timer.start()
    work = asyncio.create_task(asyncio.Event().wait())
    await timer.stop([work])
    assert work.cancelled()
    assert not timer.running
