"""Deadlines for calls in flight, kept with one timer instead of one per call.

Every request the client sends, every node call the gateway starts, has a deadline that
almost never fires: the answer comes first. A timer per call costs a timer handle and a
cancel on each, and asyncio keeps cancelled handles in its heap until their time comes
(thousands at a time: 30 s at a few thousand calls a second). Here a deadline is a dict
entry and a tuple on our own heap; forgetting one is a dict pop. The one timer is armed
at or before the earliest deadline; when it fires it expires what is due and re-arms for
the next. No deadline fires late, and forgotten ones are swept from the heap in bulk.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
from collections.abc import Callable, Hashable
from typing import Any

# uvloop's timers have millisecond resolution and may fire that much before `when`: a
# deadline that close counts as due (rather than re-arming for a sliver of time)
EARLY = 0.001


class Deadlines:
    """Deadlines keyed by call; `add()` arms one, `discard()` forgets it (cheap)."""

    def __init__(self) -> None:
        self._due: dict[Hashable, tuple[int, Callable[..., None], tuple[Any, ...]]] = {}
        # (when, ticket, key); an entry whose ticket no longer matches `_due` is stale
        self._heap: list[tuple[float, int, Hashable]] = []
        self._tickets = itertools.count()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = math.inf

    def __len__(self) -> int:
        return len(self._due)

    def add(
        self, key: Hashable, seconds: float, on_expiry: Callable[..., None], *args: Any
    ) -> None:
        """Call `on_expiry(*args)` in `seconds` unless `key` is discarded first (adding a
        key again replaces its deadline)."""
        loop = self._loop
        if loop is None or loop.is_closed():  # first use, or a client outliving its loop
            self.close()
            loop = self._loop = asyncio.get_running_loop()
        when = loop.time() + seconds
        ticket = next(self._tickets)
        self._due[key] = (ticket, on_expiry, args)
        heap = self._heap
        if len(heap) > 2 * len(self._due) + 64:  # mostly forgotten deadlines: sweep
            self._sweep()
        heapq.heappush(heap, (when, ticket, key))
        if when < self._timer_at:
            self._arm(loop, when)

    def discard(self, key: Hashable) -> None:
        # its heap entry goes stale; the timer stays (firing early, it only re-arms)
        self._due.pop(key, None)

    def close(self) -> None:
        """Forget every deadline and stop the timer (nothing expires)."""
        self._due.clear()
        self._heap.clear()
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_at, self._loop = None, math.inf, None

    def _sweep(self) -> None:
        self._heap = [entry for entry in self._heap if self._current(entry)]
        heapq.heapify(self._heap)

    def _current(self, entry: tuple[float, int, Hashable]) -> bool:
        due = self._due.get(entry[2])
        return due is not None and due[0] == entry[1]

    def _arm(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_at(when, self._fire)
        self._timer_at = when

    def _fire(self) -> None:
        self._timer, self._timer_at = None, math.inf
        loop = self._loop
        if loop is None:
            return
        now = loop.time() + EARLY
        heap = self._heap
        while heap and heap[0][0] <= now:
            entry = heapq.heappop(heap)
            if not self._current(entry):
                continue
            _, on_expiry, args = self._due.pop(entry[2])
            try:
                on_expiry(*args)
            except Exception as exc:  # one broken callback must not stop the others
                failed = {"message": "a deadline's callback failed", "exception": exc}
                loop.call_exception_handler(failed)
        while heap and not self._current(heap[0]):
            heapq.heappop(heap)
        if heap and heap[0][0] < self._timer_at:  # a callback may have armed a later one
            self._arm(loop, heap[0][0])
