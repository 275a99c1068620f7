"""The per-account send rate limit (gsv_core.channels.shaping.RateLimiter) on an injected
clock: a burst goes out at once, then sends wait; time refills the bucket; keys are
independent. Whether a send waits is read from its task after one turn of the loop."""

from __future__ import annotations

import asyncio
import contextlib

from gsv_core.channels.shaping import RateLimiter
from tests.waiting import WAIT


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def goes_out_at_once(limiter: RateLimiter, key: str, per_minute: int) -> bool:
    """True when a send is let through without waiting; a waiting one is cancelled."""
    task = asyncio.create_task(limiter.wait(key, per_minute))
    for _ in range(3):  # let the task take the lock and either finish or start to sleep
        await asyncio.sleep(0)
    if task.done():
        task.result()
        return True
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return False


async def burst(limiter: RateLimiter, key: str, per_minute: int) -> int:
    """How many sends go out back to back before one has to wait."""
    sent = 0
    while await goes_out_at_once(limiter, key, per_minute):
        sent += 1
    return sent


async def test_a_burst_of_a_tenth_of_the_rate_goes_out_then_sends_wait() -> None:
    """600/min: 60 sends at once (a long reply in pieces), the 61st waits."""
    limiter = RateLimiter(Clock())
    assert await burst(limiter, "telegram:default", 600) == 60


async def test_time_refills_the_bucket_at_the_per_minute_rate() -> None:
    """After the burst, one second at 600/min lets exactly 10 more through, and a full
    minute refills no more than the burst size."""
    clock = Clock()
    limiter = RateLimiter(clock)
    await burst(limiter, "k", 600)
    clock.now += 1.0
    assert await burst(limiter, "k", 600) == 10
    clock.now += 600.0
    assert await burst(limiter, "k", 600) == 60


async def test_accounts_have_separate_buckets() -> None:
    """One account spending its burst does not slow another."""
    limiter = RateLimiter(Clock())
    assert await burst(limiter, "slack:a", 30) == 3
    assert await burst(limiter, "slack:b", 30) == 3
    assert not await goes_out_at_once(limiter, "slack:a", 30)


async def test_a_low_or_zero_rate_still_lets_one_send_through() -> None:
    """The burst is at least one message; a rate of 0 counts as 1 per minute."""
    clock = Clock()
    limiter = RateLimiter(clock)
    assert await burst(limiter, "k", 0) == 1
    clock.now += 59.0
    assert not await goes_out_at_once(limiter, "k", 0)
    clock.now += 1.0
    assert await goes_out_at_once(limiter, "k", 0)


async def test_a_waiting_send_goes_out_once_its_turn_comes() -> None:
    """At 6000/min the send after the burst waits about 10 ms, then is let through and
    the bucket is empty again behind it."""
    limiter = RateLimiter(Clock())
    assert await burst(limiter, "k", 6000) == 600
    await asyncio.wait_for(limiter.wait("k", 6000), WAIT)
    assert not await goes_out_at_once(limiter, "k", 6000)
