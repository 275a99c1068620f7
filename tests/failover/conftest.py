"""Fixtures for failover tests: a real gateway on port 0 whose providers are the official
SDKs talking HTTP to the fake LLM server on 127.0.0.1, and a client following events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from gsv_core.providers.retry import RetryPolicy
from tests.agent.conftest import client
from tests.agent.conftest import log
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import fake_llm_server
from tests.gateway.conftest import owner
from tests.gateway.test_foreign_channel import channel
from tests.providers import NoSleep

# shared fixtures: a client and its event log, an owner socket, the example channel
__all__ = ["channel", "client", "log", "owner"]


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with fake_llm_server() as server:
        yield server


@pytest.fixture
def waits() -> NoSleep:
    """The retry waits the gateway's providers asked for, recorded instead of slept."""
    return NoSleep()


@pytest.fixture
async def gw(tmp_path: Path, waits: NoSleep) -> AsyncIterator[RunningGateway]:
    """Providers resolved from the config as in production, with a retry policy that
    records its waits instead of sleeping them."""
    async with serve(gateway_config(tmp_path, waits), port=0) as running:
        yield running


def gateway_config(tmp_path: Path, waits: NoSleep) -> ServerConfig:
    policy = RetryPolicy(sleep=waits, jitter=lambda: 0.0)
    return ServerConfig(database=tmp_path / "data" / "gsv.db", retry=policy)


async def configure(client: GatewayClient, values: dict[str, Any]) -> None:
    for path, value in values.items():
        await client.call("config.set", {"path": path, "value": value})


def fake_provider(llm: FakeLLMServer, api: str) -> dict[str, str]:
    base = llm.anthropic_base_url if api == "anthropic" else llm.openai_base_url
    return {"api": api, "baseUrl": base}
