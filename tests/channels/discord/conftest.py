"""The Discord adapter over the fake seam: a fresh adapter, and one already running."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator

import pytest

from gsv_core.channels.discord import DiscordChannel
from tests.fakes.channel_sink import RecordingSink
from tests.fakes.channel_sink import Sleeps
from tests.fakes.discord_seam import TOKEN
from tests.fakes.discord_seam import FakeDiscord


@pytest.fixture
def fake() -> FakeDiscord:
    return FakeDiscord()


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def sink() -> RecordingSink:
    return RecordingSink(channel="discord")


@pytest.fixture
async def channel(fake: FakeDiscord, sleeps: Sleeps) -> AsyncIterator[DiscordChannel]:
    adapter = DiscordChannel(
        fake.build, sleep=sleeps, rng=random.Random(7), max_attachment_bytes=1000
    )
    yield adapter
    for status in adapter.status():
        await adapter.stop(status.account_id)


@pytest.fixture
async def running(
    channel: DiscordChannel, fake: FakeDiscord, sink: RecordingSink
) -> DiscordChannel:
    await channel.start("default", {"botToken": TOKEN}, sink)
    await sink.wait_for(lambda: channel.status("default")[0].connected)
    return channel
