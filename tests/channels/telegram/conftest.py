"""The fake Bot API, and the Telegram adapter over it: a fresh adapter, and one running."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from collections.abc import Iterator

import pytest

from gsv_core.channels.telegram import TelegramChannel
from tests.fakes.channel_sink import RecordingSink
from tests.fakes.channel_sink import Sleeps
from tests.fakes.telegram_adapter import bot_config
from tests.fakes.telegram_api import FakeTelegramAPI
from tests.fakes.telegram_api import fake_telegram_api


@pytest.fixture
def api() -> Iterator[FakeTelegramAPI]:
    with fake_telegram_api() as server:
        yield server


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
async def channel(sleeps: Sleeps) -> AsyncIterator[TelegramChannel]:
    adapter = TelegramChannel(sleep=sleeps, rng=random.Random(7))
    yield adapter
    for status in adapter.status():
        await adapter.stop(status.account_id)


@pytest.fixture
def sink() -> RecordingSink:
    return RecordingSink(channel="telegram")


@pytest.fixture
async def running(
    api: FakeTelegramAPI, channel: TelegramChannel, sink: RecordingSink
) -> TelegramChannel:
    await channel.start("default", bot_config(api), sink)
    return channel
