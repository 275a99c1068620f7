"""Fixtures for agent tests: a real gateway on port 0 whose model is a FakeProvider, a
real client, and helpers that follow a run's events."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from tests.fakes.provider import FakeProvider
from tests.waiting import WAIT

KEY = "agent:main:main"


@pytest.fixture
def fake() -> FakeProvider:
    return FakeProvider()


@pytest.fixture
async def gw(tmp_path: Path, fake: FakeProvider) -> AsyncIterator[RunningGateway]:
    config = ServerConfig(database=tmp_path / "data" / "gsv.db", provider_factory=fake.factory)
    async with serve(config, port=0) as running:
        yield running


@pytest.fixture
async def client(gw: RunningGateway) -> AsyncIterator[GatewayClient]:
    async with GatewayClient(gw.url, token=gw.token) as connected:
        yield connected


class EventLog:
    """Every event a client receives, collected in the background."""

    def __init__(self, client: GatewayClient) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self._changed = asyncio.Event()
        self._task = asyncio.create_task(self._collect(client))

    async def _collect(self, client: GatewayClient) -> None:
        async for frame in client.events():
            self.events.append((frame.event, frame.payload))
            self._changed.set()

    def of_run(self, run_id: str, event: str = "chat") -> list[dict[str, Any]]:
        return [p for name, p in self.events if name == event and p.get("runId") == run_id]

    def states(self, run_id: str) -> list[str]:
        return [p["state"] for p in self.of_run(run_id)]

    async def wait(self, predicate: Any, what: str, timeout: float = WAIT) -> None:
        try:
            async with asyncio.timeout(timeout):
                while not predicate():
                    self._changed.clear()
                    await self._changed.wait()
        except TimeoutError:
            raise AssertionError(f"timed out waiting for {what}; events: {self.events}") from None

    async def ended(self, run_id: str) -> dict[str, Any]:
        """The run's final or error event (waits for it)."""
        await self.wait(
            lambda: {"final", "error"} & set(self.states(run_id)), f"run {run_id} to end"
        )
        return next(p for p in self.of_run(run_id) if p["state"] in ("final", "error"))

    async def close(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)


@pytest.fixture
async def log(client: GatewayClient) -> AsyncIterator[EventLog]:
    events = EventLog(client)
    yield events
    await events.close()


async def send(client: GatewayClient, message: str, key: str = KEY, **extra: Any) -> dict[str, Any]:
    result: dict[str, Any] = await client.call(
        "chat.send", {"sessionKey": key, "message": message, **extra}
    )
    return result
