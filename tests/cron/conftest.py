"""Fixtures for cron tests: a real gateway on port 0 with a scripted model and a clock the
test moves, a real client, and small helpers."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from tests.fakes.provider import FakeProvider
from tests.waiting import until

eventually = until  # the name the cron tests (and those borrowing them) wait with

START = int(dt.datetime(2026, 2, 13, 18, 0, tzinfo=dt.UTC).timestamp() * 1000)
HOUR = 3_600_000


class Clock:
    """The gateway's `now_ms`: frozen until the test moves it."""

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
def database(tmp_path: Path) -> Path:
    return tmp_path / "data" / "gsv.db"


def server_config(database: Path, fake: FakeProvider, clock: Clock) -> ServerConfig:
    return ServerConfig(database=database, provider_factory=fake.factory, now_ms=clock)


@pytest.fixture
async def gw(database: Path, fake: FakeProvider, clock: Clock) -> AsyncIterator[RunningGateway]:
    async with serve(server_config(database, fake, clock), port=0) as running:
        yield running


@pytest.fixture
async def client(gw: RunningGateway) -> AsyncIterator[GatewayClient]:
    async with GatewayClient(gw.url, token=gw.token) as connected:
        yield connected


def task_job(name: str = "report", **spec: Any) -> dict[str, Any]:
    """A cron.add document: a task, once, an hour from the start."""
    return {
        "name": name,
        "schedule": {"kind": "at", "atMs": START + HOUR},
        "spec": {"mode": "task", "message": f"{name}: do it", **spec},
    }
