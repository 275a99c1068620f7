"""Failures the chat TUI rides out and explains: provider errors, no model configured,
a gateway restart, no gateway at all."""

from __future__ import annotations

import socket
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from gsv_cli.tui.app import ChatApp
from gsv_cli.tui.app import make_app
from gsv_cli.tui.widgets.messages import Notice
from gsv_cli.tui.widgets.status import Banner
from gsv_core.errors import ProviderFailed
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from gsv_core.localconfig import generate_token
from gsv_core.localconfig import set_secret
from tests.fakes.provider import Fail
from tests.fakes.provider import FakeProvider
from tests.tui.chat_screen import notices
from tests.tui.chat_screen import replies
from tests.tui.conftest import KEY
from tests.tui.conftest import SIZE
from tests.tui.conftest import URL_LABEL
from tests.tui.conftest import quick_client
from tests.tui.conftest import type_and_send
from tests.tui.conftest import wait_until


async def test_a_provider_error_shows_in_the_message_area(app: ChatApp, fake: FakeProvider) -> None:
    """A failing model is reported in the conversation; the app keeps going."""
    fake.enqueue(Fail(ProviderFailed("the model is down")))
    fake.enqueue("back again")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        await type_and_send(pilot, "hi")
        await wait_until(pilot, lambda: "the model is down" in notices(app), "the error")
        error = next(n for n in app.query(Notice) if n.text == "the model is down")
        assert error.kind == "error"
        await type_and_send(pilot, "again")
        await wait_until(pilot, lambda: "back again" in replies(app), "the next reply")


async def test_no_model_configured_shows_the_setup_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no API key anywhere, the empty chat and the failed first run show the exact
    commands for Anthropic, OpenAI and Ollama."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    async with serve(ServerConfig(database=tmp_path / "real.db"), port=0) as real:
        client = quick_client(real.url)
        app = make_app(client, KEY, url_label=URL_LABEL)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, app.synced.is_set, "the session to load")
            hint = " ".join(notices(app))
            assert "No API key for anthropic" in hint
            await type_and_send(pilot, "hi")
            await wait_until(
                pilot,
                lambda: any("The gateway said: no API key" in t for t in notices(app)),
                "the run's error",
            )
            setup = next(
                n for n in app.query(Notice) if n.text.startswith("No model is configured")
            )
            assert "gsv config set apiKeys.anthropic sk-ant-..." in setup.text
            assert "gsv config set apiKeys.openai sk-..." in setup.text
            assert (
                """gsv config set providers.ollama '{"api":"openai","baseUrl":"http://127.0.0.1:11434/v1"}'"""
                in setup.text
            )
            assert """gsv config set model '{"provider":"ollama","id":"llama3.1"}'""" in setup.text
        await client.close()


async def test_the_chat_recovers_after_a_gateway_restart(
    database: Path, fake: FakeProvider
) -> None:
    """Stopping the gateway shows the reconnect banner; once it is back (same port) the
    banner goes, the session is loaded again and the chat works without a restart."""
    config = ServerConfig(database=database, provider_factory=fake.factory)
    fake.enqueue("before")
    fake.enqueue("after")
    stack = AsyncExitStack()
    first = await stack.enter_async_context(serve(config, port=0))
    client = quick_client(first.url)
    app = make_app(client, KEY, url_label=URL_LABEL)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, app.synced.is_set, "the session to load")
            await type_and_send(pilot, "one")
            await wait_until(pilot, lambda: "before" in replies(app), "the first reply")
            await stack.aclose()
            banner = app.query_one(Banner)
            await wait_until(
                pilot, lambda: app.status.connection == "reconnecting", "the reconnecting state"
            )
            assert banner.display and "reconnecting" in banner.text
            async with serve(config, port=first.port):
                await wait_until(
                    pilot,
                    lambda: app.status.connection == "connected" and app.synced.is_set(),
                    "the reconnect",
                )
                assert not banner.display
                assert replies(app) == ["before"], "the conversation was loaded again"
                await type_and_send(pilot, "two")
                await wait_until(
                    pilot, lambda: "after" in replies(app), "a reply after the restart"
                )
    finally:
        await stack.aclose()
        await client.close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_no_gateway_shows_how_to_start_it_then_connects(
    database: Path, fake: FakeProvider
) -> None:
    """Connection refused at start: a banner says how to start the gateway; when one starts,
    the chat connects by itself."""
    port = _free_port()
    set_secret("gateway.token", generate_token())  # the owner's, adopted by the gateway
    client = quick_client(f"ws://127.0.0.1:{port}/ws")
    app = make_app(client, KEY, url_label=URL_LABEL)
    try:
        async with app.run_test(size=SIZE) as pilot:
            banner = app.query_one(Banner)
            await wait_until(pilot, lambda: banner.display, "the banner")
            assert "Cannot reach the gateway at ws://gateway.test/ws" in banner.text
            assert "gsv up" in banner.text and app.status.connection == "offline"
            async with serve(
                ServerConfig(database=database, provider_factory=fake.factory), port=port
            ):
                await wait_until(
                    pilot,
                    lambda: app.synced.is_set() and app.status.connection == "connected",
                    "the connection",
                )
                assert not banner.display
    finally:
        await client.close()
