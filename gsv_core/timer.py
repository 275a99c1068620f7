"""Timer: the one asyncio task behind a service that starts its work when it falls due
(cron jobs, heartbeats).

Each tick does the due work and says how many seconds to sleep; the task then sleeps that
long or until `wake()`, whichever comes first. A tick that raises is logged and the
timer goes on: one bad job or config must not stop every later one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from collections.abc import Iterable
from typing import Any

log = logging.getLogger(__name__)

# The longest sleep, so that a clock jump or a config change is noticed within a minute.
MAX_SLEEP_SECONDS = 60.0


class Timer:
    """Calls `tick()` (which returns the seconds until it wants to look again) in a task
    named `gsv-{name}-timer`."""

    def __init__(self, name: str, tick: Callable[[], float]) -> None:
        self.name = name
        self._tick = tick
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None

    def start(self) -> None:
        """Start the task; a running timer is left as it is."""
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name=f"gsv-{self.name}-timer")

    def wake(self) -> None:
        """Tick again now (something changed)."""
        self._wake.set()

    async def stop(self, work: Iterable[asyncio.Task[Any]] = ()) -> None:
        """Cancel the task and, with it, the `work` its ticks started; wait for all."""
        tasks = list(work)
        if self._task is not None:
            tasks.append(self._task)
            self._task = None
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _loop(self) -> None:
        while True:
            self._wake.clear()
            try:
                delay = self._tick()
            except Exception:  # one bad tick must not end the timer
                log.exception("%s timer tick failed", self.name)
                delay = MAX_SLEEP_SECONDS
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._wake.wait()


def seconds_until(due_ms: Iterable[int], now_ms: int) -> float:
    """Seconds from `now_ms` until the earliest of the future times `due_ms` (epoch ms),
    at most MAX_SLEEP_SECONDS; times already past are left out."""
    future = [at for at in due_ms if at > now_ms]
    if not future:
        return MAX_SLEEP_SECONDS
    return min(MAX_SLEEP_SECONDS, (min(future) - now_ms) / 1000)
