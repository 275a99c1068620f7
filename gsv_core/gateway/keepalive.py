"""One keepalive for every connection: a timer wheel swept by one task.

websockets' own keepalive runs a task per connection that pings every interval whether
the peer talks or not; at a thousand idle nodes those tasks, their timers and their pings
were most of the gateway's idle CPU. Here one task wakes every `tick` seconds and looks
only at the connections whose turn it is (their slot of the wheel):

- a peer heard from (any message, or the pong of our last ping) within `interval` is
  not pinged: it is looked at again `interval` after it was last heard;
- a peer silent for `interval` is pinged (websockets' public `ping()`), and looked at
  again `timeout` later;
- a peer whose pong has not come back by then is dropped (`Watched.lost`): its calls
  fail, its tools leave the list, and its socket is closed within the close timeout.

Slots are `tick` wide and swept at their start, so a ping or a drop comes up to one tick
early, never late: a frozen peer is gone within interval + timeout + close timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable
from collections.abc import Callable
from typing import Protocol

from websockets.exceptions import ConnectionClosed

log = logging.getLogger(__name__)

DEFAULT_TICK = 0.5


class Watched(Protocol):
    """A connection the keepalive looks after."""

    # time.monotonic() when anything last came from the peer (its reader sets it)
    heard: float

    async def ping(self) -> Awaitable[float]:
        """Send a ping; the awaitable resolves when its pong arrives."""
        ...

    def lost(self, reason: str) -> None:
        """The peer stopped answering: drop it."""
        ...


class _Entry:
    __slots__ = ("peer", "pinged_at", "slot", "waiting")

    def __init__(self, peer: Watched) -> None:
        self.peer = peer
        self.slot = -1
        self.waiting = False  # for the pong of the ping sent at `pinged_at`
        self.pinged_at = 0.0


class Keepalive:
    """Pings silent peers and drops those that do not answer, from one task."""

    def __init__(
        self,
        interval: float,
        timeout: float,
        close_timeout: float,
        tick: float = DEFAULT_TICK,
        clock: Callable[[], float] = time.monotonic,  # tests move time; peers' `heard` too
    ) -> None:
        if interval <= 0 or timeout <= 0 or tick <= 0:
            raise ValueError("keepalive interval, timeout and tick must be positive")
        self.interval = interval
        self.timeout = timeout
        # a dropped peer's socket is closed within this (it will not answer the close)
        self.close_timeout = close_timeout
        self._tick = min(tick, interval / 2, timeout / 2)
        self._clock = clock
        self._entries: dict[Watched, _Entry] = {}
        self._slots: dict[int, set[_Entry]] = {}
        self._swept = self._slot_of(clock()) - 1  # the last slot swept
        self._task: asyncio.Task[None] | None = None
        self.pings_sent = 0  # how many pings the silent peers have needed (status, tests)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="gsv-keepalive")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def watch(self, peer: Watched) -> None:
        entry = self._entries[peer] = _Entry(peer)
        self._schedule(entry, peer.heard + self.interval)

    def forget(self, peer: Watched) -> None:
        entry = self._entries.pop(peer, None)
        if entry is not None:
            self._unschedule(entry)

    def __len__(self) -> int:
        return len(self._entries)

    # -- the wheel ----------------------------------------------------------------------
    def _slot_of(self, when: float) -> int:
        return math.floor(when / self._tick)

    def _schedule(self, entry: _Entry, when: float) -> None:
        self._unschedule(entry)
        # never into a slot already swept: it would wait a whole turn of the clock
        entry.slot = max(self._slot_of(when), self._swept + 1)
        self._slots.setdefault(entry.slot, set()).add(entry)

    def _unschedule(self, entry: _Entry) -> None:
        slot = self._slots.get(entry.slot)
        if slot is not None:
            slot.discard(entry)
            if not slot:
                del self._slots[entry.slot]

    async def _run(self) -> None:
        while True:
            next_slot = self._swept + 1
            await asyncio.sleep(max(0.0, next_slot * self._tick - self._clock()))
            try:
                await self.sweep()
            except Exception:  # the keepalive must outlive any one peer's surprise
                log.exception("keepalive sweep failed")

    async def sweep(self) -> None:
        """Look at every peer whose slot has come (up to now)."""
        now = self._clock()
        current = self._slot_of(now)
        while self._swept < current:
            self._swept += 1
            for entry in self._slots.pop(self._swept, ()):
                # moved meanwhile (a pong came back) or forgotten: not its turn
                if entry.slot == self._swept and self._entries.get(entry.peer) is entry:
                    await self._look_at(entry, now)

    async def _look_at(self, entry: _Entry, now: float) -> None:
        # judged at the end of the slot: up to a tick early, never late
        horizon = now + self._tick
        peer = entry.peer
        if entry.waiting:
            if horizon < entry.pinged_at + self.timeout:
                self._schedule(entry, entry.pinged_at + self.timeout)
                return
            self.forget(peer)
            log.info("a peer did not answer a ping within %.1fs: dropped", self.timeout)
            peer.lost("keepalive ping timeout")
            return
        if horizon < peer.heard + self.interval:
            self._schedule(entry, peer.heard + self.interval)  # heard lately: no ping
            return
        entry.waiting, entry.pinged_at = True, now
        self.pings_sent += 1
        self._schedule(entry, now + self.timeout)
        try:
            pong = await self._ping(peer)
        except ConnectionClosed:  # closing already: its reader ends and it leaves
            self.forget(peer)
            return
        if isinstance(pong, asyncio.Future):
            pong.add_done_callback(lambda answer: self._answered(entry, answer))

    async def _ping(self, peer: Watched) -> Awaitable[float] | None:
        """Send a ping without letting one peer hold up the sweep. Writing it waits only
        while the socket's buffer is full (a peer that stopped reading): such a ping is
        given up at once, so a crowd of stuck peers cannot stall the others; it has no
        pong to wait for, and the timeout decides."""
        try:
            async with asyncio.timeout(0):  # fires only if the write has to wait
                return await peer.ping()
        except TimeoutError:
            return None

    def _answered(self, entry: _Entry, pong: asyncio.Future[float]) -> None:
        """A pong came back (or the socket closed, failing the ping)."""
        if pong.cancelled() or pong.exception() is not None:
            return
        if self._entries.get(entry.peer) is not entry or not entry.waiting:
            return
        entry.waiting = False
        entry.peer.heard = self._clock()
        self._schedule(entry, entry.peer.heard + self.interval)
