"""The loop of a timer that works, then sleeps until its next work is due or something
wakes it: the cron timer, the heartbeat and the channel reply queue each run one."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)


async def run_timer(
    tick: Callable[[], float | Awaitable[float]],
    wake: asyncio.Event,
    name: str,
    fallback_s: float,
) -> None:
    """Call `tick()` (it returns the seconds until it wants to run again), then wait that
    long or until `wake` is set; forever, until cancelled. A tick that raises is logged
    and tried again after `fallback_s`: the timer outlives one bad tick."""
    while True:
        wake.clear()
        try:
            delay = tick()
            if inspect.isawaitable(delay):
                delay = await delay
        except Exception:
            log.exception("%s tick failed", name)
            delay = fallback_s
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(delay):
                await wake.wait()
