"""A recording `ChannelSink` and a recording sleep, for the adapter tests (Telegram,
Discord) that drive an adapter without a gateway."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from gsv_core.channels.base import AccountStatus
from gsv_core.channels.base import InboundMessage
from tests.waiting import WAIT


@dataclass
class RecordingSink:
    """A ChannelSink that records; it can fail a number of hand-overs or hold them."""

    messages: list[InboundMessage] = field(default_factory=list)
    statuses: list[AccountStatus] = field(default_factory=list)
    failed: list[InboundMessage] = field(default_factory=list)
    failures: int = 0
    gate: asyncio.Event | None = None
    entered: asyncio.Event = field(default_factory=asyncio.Event)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    channel: str | None = None  # when set, status changes must come from this adapter

    async def inbound(self, message: InboundMessage) -> None:
        self.entered.set()
        if self.gate is not None:
            await self.gate.wait()
        if self.failures:
            self.failures -= 1
            self.failed.append(message)
            self.changed.set()
            raise RuntimeError("journal write failed")
        self.messages.append(message)
        self.changed.set()

    def status_changed(self, channel: str, status: AccountStatus) -> None:
        assert self.channel in (None, channel)
        self.statuses.append(status)
        self.changed.set()

    async def wait_for(self, predicate: Callable[[], Any]) -> None:
        async with asyncio.timeout(WAIT):
            while not predicate():
                self.changed.clear()
                await self.changed.wait()


@dataclass
class Sleeps:
    """The adapter's injected sleep: records each wait and only yields."""

    waits: list[float] = field(default_factory=list)

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        await asyncio.sleep(0)
