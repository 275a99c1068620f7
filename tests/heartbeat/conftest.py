"""Fixtures for heartbeat tests: a clock the test moves, a real gateway on port 0 with a
scripted model and that clock, a real client, and a bounded wait for background beats."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from tests.fakes.provider import FakeProvider
from tests.waiting import until

eventually = until  # the name the heartbeat tests (and those borrowing them) wait with

# a Friday, 18:00 UTC: inside the default active hours (08:00-23:00)
START = int(dt.datetime(2026, 2, 13, 18, 0, tzinfo=dt.UTC).timestamp() * 1000)
MINUTE = 60_000
HOUR = 60 * MINUTE


class Clock:
    """`now_ms`: frozen until the test moves it."""

    def __init__(self, now: int = START) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def fake() -> FakeProvider:
    return FakeProvider()


@pytest.fixture
async def gw(tmp_path: Path, fake: FakeProvider, clock: Clock) -> AsyncIterator[RunningGateway]:
    config = ServerConfig(
        database=tmp_path / "data" / "gsv.db", provider_factory=fake.factory, now_ms=clock
    )
    async with serve(config, port=0) as running:
        yield running


@pytest.fixture
async def client(gw: RunningGateway) -> AsyncIterator[GatewayClient]:
    async with GatewayClient(gw.url, token=gw.token) as connected:
        yield connected
