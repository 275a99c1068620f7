"""Fixtures for gateway tests that need a model: a real gateway whose provider is a
FakeProvider, and an owner socket connected as a client written for the original."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from websockets.asyncio.client import ClientConnection

from gsv_core.gateway.server import RunningGateway, ServerConfig, serve
from tests.fakes.provider import FakeProvider
from tests.wire import connect_minimal, owner_token


@pytest.fixture
def fake() -> FakeProvider:
    return FakeProvider()


@pytest.fixture
async def gw(tmp_path: Path, fake: FakeProvider) -> AsyncIterator[RunningGateway]:
    config = ServerConfig(database=tmp_path / "gsv.db", provider_factory=fake.factory)
    async with serve(config, port=0) as running:
        yield running


@pytest.fixture
async def owner(gw: RunningGateway) -> AsyncIterator[ClientConnection]:
    client = {"id": "old-cli", "mode": "client"}
    ws = await connect_minimal(gw.url, client, auth={"token": owner_token()})
    yield ws
    await ws.close()
