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
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

HOLD_LIMIT = 1.0  # seconds a run waits at most at one turn while acks keep coming


class AckFirst:
    """Counts the acks in progress; runs wait for none to be before their next step."""

    def __init__(self, hold_limit: float = HOLD_LIMIT) -> None:
        self.hold_limit = hold_limit
        self._acking = 0
        self._clear = asyncio.Event()
        self._clear.set()

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

    async def turn(self) -> None:
        """A run's turn: yield to whatever is ready, then wait while acks are in
        progress (at most `hold_limit`)."""
        await asyncio.sleep(0)
        if self._clear.is_set():
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.hold_limit):
                await self._clear.wait()

    def _add(self, step: int) -> None:
        self._acking += step
        if self._acking > 0:
            self._clear.clear()
        else:
            self._clear.set()
