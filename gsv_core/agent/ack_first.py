"""Acks before run work: a message being stored and acknowledged (`chat.send`,
`channel.inbound`) goes ahead of the gateway's runs.

Everything shares one event loop. When a crowd of messages arrives at once, the runs
started by the first ones would otherwise fill the loop (and every client's outgoing
queue, since clients see every session's events) while the later messages still wait
for their acks. So a run takes its turn (`AckFirst.turn`) before each piece of work
(its start, each model call, each batch of tool calls): it yields once, then waits while
any message is between arriving and its ack. An ack does only quick work (store the
message, answer); what may take long inside it (a slash command calling the model)
steps aside (`AckFirst.aside`), and no run waits longer than `HOLD_LIMIT` at one turn,
so a flood of messages slows runs down but never stops them.

A turn also paces the runs: one of them takes one per pass of the event loop, first come
first served. A crowd of runs released together (after a burst of acks) would otherwise
go in lockstep, every one's step ready in the same pass, and one pass would hold the loop
(and every request waiting for it) for all of them at once. Besides each piece of work, a
run takes a turn once its prompt files are read (building and sending the request is its
heaviest step) and for each piece of the model's reply (run.py; that one does not wait
for acks, or a steady flow of messages would hold a long reply). One a pass, not four:
measured with 100 chats at once (bench/crowd.py), four a pass let a `config.get` wait
behind four requests being built, about 140 ms at the 99th percentile; one, about 30-60 ms.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Iterator

HOLD_LIMIT = 1.0  # seconds a run waits at most at one turn while acks keep coming
PER_ROUND = 1  # runs that take a turn in one pass of the event loop


class AckFirst:
    """Counts the acks in progress; runs wait for none to be before their next step."""

    def __init__(self, hold_limit: float = HOLD_LIMIT, per_round: int = PER_ROUND) -> None:
        self.hold_limit = hold_limit
        self.per_round = per_round
        self._acking = 0
        self._clear = asyncio.Event()
        self._clear.set()
        self._passed = 0  # turns taken in this pass of the loop
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._round_due = False  # a new round is scheduled for the next pass

    @property
    def acking(self) -> int:
        """Messages between arriving and their ack now."""
        return self._acking

    @contextlib.contextmanager
    def ack(self) -> Iterator[None]:
        """Around the handling of one message up to its ack: runs wait meanwhile."""
        self._add(1)
        try:
            yield
        finally:
            self._add(-1)

    @contextlib.contextmanager
    def aside(self) -> Iterator[None]:
        """Inside `ack()`, around work that may take long (a command calling the model):
        runs go on meanwhile."""
        self._add(-1)
        try:
            yield
        finally:
            self._add(1)

    async def turn(self, hold: bool = True) -> None:
        """A run's turn: yield to whatever is ready, wait while acks are in progress (at
        most `hold_limit`; not with `hold` False, for the many small pieces of a reply,
        which a steady flow of messages would otherwise hold up to a second each), then
        for a place in a round of `per_round` turns."""
        await asyncio.sleep(0)
        if hold and not self._clear.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.hold_limit):
                    await self._clear.wait()
        if self._passed < self.per_round and not self._waiting:
            self._pass()
            return
        place = asyncio.get_running_loop().create_future()
        self._waiting.append(place)
        self._schedule_round()
        try:
            await place
        except asyncio.CancelledError:
            if not place.done():
                self._waiting.remove(place)
            raise

    def _pass(self) -> None:
        self._passed += 1
        self._schedule_round()

    def _schedule_round(self) -> None:
        if not self._round_due:
            self._round_due = True
            asyncio.get_running_loop().call_soon(self._new_round)

    def _new_round(self) -> None:
        """The next pass of the loop: the first waiters take this round's turns."""
        self._round_due = False
        self._passed = 0
        while self._waiting and self._passed < self.per_round:
            place = self._waiting.popleft()
            if not place.done():  # not cancelled meanwhile
                place.set_result(None)
                self._pass()
        if self._waiting:
            self._schedule_round()

    def _add(self, step: int) -> None:
        self._acking += step
        if self._acking > 0:
            self._clear.clear()
        else:
            self._clear.set()
