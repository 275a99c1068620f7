"""Fixtures for the chat TUI: a real gateway on port 0 whose model is a FakeProvider, a real
GatewayClient (reconnect on, short backoff) and the app built by make_app, driven by Pilot;
for model setup, a gateway with its real providers (the official SDKs) and a fake
OpenAI-compatible server on 127.0.0.1 for them to talk to."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from collections.abc import Callable
from collections.abc import Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from gsv_cli.tui.app import ChatApp
from gsv_cli.tui.app import make_app
from gsv_cli.tui.model_setup import HOSTED_KEY_VARS
from gsv_core.client import Backoff
from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from gsv_core.localconfig import get_secret
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import fake_llm_server
from tests.fakes.provider import FakeProvider
from tests.waiting import WAIT

KEY = "agent:main:main"
URL_LABEL = "ws://gateway.test/ws"  # a fixed address on screen: snapshots stay stable
SIZE = (80, 24)


@pytest.fixture
def fake() -> FakeProvider:
    return FakeProvider()


@pytest.fixture
def database(tmp_path: Path) -> Path:
    return tmp_path / "data" / "gsv.db"


@pytest.fixture
async def gw(database: Path, fake: FakeProvider) -> AsyncIterator[RunningGateway]:
    async with serve(
        ServerConfig(database=database, provider_factory=fake.factory), port=0
    ) as running:
        yield running


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with fake_llm_server() as server:
        server.models = ["mini-1", "llama3.1:8b"]
        yield server


@pytest.fixture
async def real_gw(database: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[RunningGateway]:
    """A gateway whose providers are the real adapters; no API key in its environment."""
    for var in HOSTED_KEY_VARS.values():
        monkeypatch.delenv(var, raising=False)
    async with serve(ServerConfig(database=database), port=0) as running:
        yield running


def quick_client(url: str) -> GatewayClient:
    """A client that reconnects fast (tests restart gateways), with the owner token the
    test's gateway keeps in the secret store."""
    token = get_secret("gateway.token")
    return GatewayClient(url, token=token, reconnect=True, backoff=Backoff(base=0.05, cap=0.2))


@pytest.fixture
async def client(gw: RunningGateway) -> AsyncIterator[GatewayClient]:
    connected = quick_client(gw.url)
    yield connected
    await connected.close()


@pytest.fixture
def app(client: GatewayClient) -> ChatApp:
    return make_app(client, KEY, url_label=URL_LABEL)


async def wait_until(
    pilot: Pilot[None], predicate: Callable[[], object], what: str, timeout: float = WAIT
) -> None:
    """Let the app work until `predicate()` holds (fails the test after `timeout`)."""
    try:
        async with asyncio.timeout(timeout):
            while not predicate():
                await pilot.pause(0.01)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


async def type_and_send(pilot: Pilot[None], text: str) -> None:
    app = pilot.app
    assert isinstance(app, ChatApp)
    app.composer.focus()
    app.composer.insert(text)
    await pilot.press("enter")


@asynccontextmanager
async def open_chat(
    gw: RunningGateway, config: dict[str, Any] | None = None
) -> AsyncIterator[tuple[ChatApp, Pilot[None]]]:
    """The chat on `gw` under Pilot, its session loaded, after the `config` writes (path:
    value); `app.client` is open while the app runs."""
    async with GatewayClient(gw.url, token=gw.token) as client:
        for path, value in (config or {}).items():
            await client.call("config.set", {"path": path, "value": value})
        app = make_app(client, KEY, url_label=URL_LABEL)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, app.synced.is_set, "the session to load")
            yield app, pilot
