"""What the Telegram adapter tests share over the fake Bot API: a recording sink, recorded
sleeps, the bot's config, and helpers that wait for an update or an API call."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from gsv_core.channels.base import InboundMessage
from tests.fakes.channel_sink import RecordingSink
from tests.fakes.telegram_api import BOT_USER
from tests.fakes.telegram_api import ApiCall
from tests.fakes.telegram_api import FakeTelegramAPI

BOT_ID = str(BOT_USER["id"])
SECRET = "AAH-fake-bot-token_for-tests-9z"  # the secret half of the fake's token


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
