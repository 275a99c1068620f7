"""What the Telegram adapter tests share over the fake Bot API: a recording sink, recorded
sleeps, the bot's config, and helpers that wait for an update or an API call."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gsv_core.channels.base import (
    AccountStatus,
    InboundMessage,
)
from tests.fakes.telegram_api import (
    BOT_USER,
    ApiCall,
    FakeTelegramAPI,
)

BOT_ID = str(BOT_USER["id"])
SECRET = "AAH-fake-bot-token_for-tests-9z"  # the secret half of the fake's token


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
        assert channel == "telegram"
        self.statuses.append(status)
        self.changed.set()

    async def wait_for(self, predicate: Callable[[], Any]) -> None:
        async with asyncio.timeout(15):
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


def bot_config(api: FakeTelegramAPI, **extra: Any) -> dict[str, Any]:
    return {"botToken": api.token, "apiBaseUrl": api.url, "pollTimeout": 1, **extra}


async def receive(api: FakeTelegramAPI, sink: RecordingSink, **update: Any) -> InboundMessage:
    """Queue one update and wait until the sink got a message for it."""
    before = len(sink.messages)
    api.enqueue_update(**update)
    await sink.wait_for(lambda: len(sink.messages) > before)
    return sink.messages[-1]


async def called(api: FakeTelegramAPI, predicate: Callable[[ApiCall], bool]) -> ApiCall:
    return await asyncio.to_thread(api.wait_for, predicate)
