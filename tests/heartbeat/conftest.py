"""Fixtures for heartbeat tests: a clock the test moves, a real gateway on port 0 with a
scripted model and that clock, a real client, and a bounded wait for background beats."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway, ServerConfig, serve
from tests.fakes.provider import FakeProvider

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


async def eventually(check: Callable[[], Any], what: str, timeout: float = 10) -> Any:
    """Wait (bounded) for a background task's effect: `check()` returning truthy."""
    try:
        async with asyncio.timeout(timeout):
            while True:
                value = check()
                if asyncio.iscoroutine(value):
                    value = await value
                if value:
                    return value
                await asyncio.sleep(0.01)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None
