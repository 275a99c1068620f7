"""Setting up a model inside the chat (Pilot, a real gateway with its real providers, a
fake OpenAI-compatible server on 127.0.0.1): provider, hidden key, the provider's models,
one live test call, save; a refused key, an unreachable or bad URL and a failing test
call each said in the provider's words with the fix; provider text shown literally."""

from __future__ import annotations

import logging
import socket

import pytest
from textual.pilot import Pilot
from textual.widgets import Button
from textual.widgets import Input
from textual.widgets import OptionList
from textual.widgets import Static

from gsv_cli.provider_setup import ollama_running
from gsv_cli.tui.app import make_app
from gsv_cli.tui.screens.setup import PROVIDERS
from gsv_cli.tui.screens.setup import SetupScreen
from gsv_cli.tui.widgets.model_list import ModelList
from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from tests.fakes.llm_server import ErrorReply
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import reply
from tests.tui.chat_screen import idle
from tests.tui.chat_screen import notices
from tests.tui.chat_screen import replies
from tests.tui.conftest import KEY
from tests.tui.conftest import SIZE
from tests.tui.conftest import URL_LABEL
from tests.tui.conftest import open_chat
from tests.tui.conftest import quick_client
from tests.tui.conftest import type_and_send
from tests.tui.conftest import wait_until

SECRET = "sk-typed-in-the-chat-4242"


def setup_of(pilot: Pilot[None]) -> SetupScreen:
    screen = pilot.app.screen
    assert isinstance(screen, SetupScreen)
    return screen


def status_of(screen: SetupScreen) -> str:
    return str(screen.query_one("#setup-status", Static).render())


async def open_setup(pilot: Pilot[None], typed: bool = False) -> SetupScreen:
    """Open the setup screen with F2, or by typing `/setup`."""
    if typed:
        await type_and_send(pilot, "/setup")
    else:
        await pilot.press("f2")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, SetupScreen), "the setup")
    return setup_of(pilot)


async def pick_provider(pilot: Pilot[None], name: str) -> None:
    options = setup_of(pilot).query_one("#setup-providers", OptionList)
    options.focus()
    options.highlighted = [provider for provider, _ in PROVIDERS].index(name)
    await pilot.press("enter")


async def fill(pilot: Pilot[None], selector: str, value: str) -> None:
    """Type `value` into a field of the setup screen and press Enter."""
    field = setup_of(pilot).query_one(selector, Input)
    field.focus()
    field.value = value
    await pilot.press("enter")


async def custom_provider(
    pilot: Pilot[None], url: str, key: str, typed: bool = False
) -> SetupScreen:
    screen = await open_setup(pilot, typed)
    await pick_provider(pilot, "custom")
    await fill(pilot, "#setup-url", url)
    await fill(pilot, "#setup-key", key)
    return screen


async def test_set_up_a_provider_and_chat_with_it(
    real_gw: RunningGateway, llm: FakeLLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The no-model hint offers /setup; provider, hidden key, the default model, its test
    answer, Save: the config is written as `gsv onboard` writes it, the header names the
    model and the next message goes to it. The key is never shown nor logged."""
    caplog.set_level(logging.DEBUG)
    # the test call, the two probes of how the model calls tools (it answers in words), the chat
    llm.enqueue(reply("OK"), reply("no"), reply("no"), reply("Hello from the set-up model"))
    app = make_app(quick_client(real_gw.url), KEY, url_label=URL_LABEL)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        assert any("Type /setup" in text for text in notices(app))
        screen = await custom_provider(pilot, llm.openai_base_url, SECRET)
        assert screen.query_one("#setup-key", Input).password
        assert screen.query_one("#setup-key", Input).value == "", "the field keeps no key"
        await wait_until(pilot, lambda: screen.step == "model", "the provider's models")
        assert screen.query_one(ModelList).highlighted == "llama3.1:8b"  # the preferred one
        await pilot.press("enter")  # Enter on the filter line takes the highlighted model
        save = screen.query_one("#setup-save", Button)
        await wait_until(pilot, lambda: save.display, "the test call's answer")
        assert "✓ custom/llama3.1:8b answered in" in status_of(screen)
        assert ": OK\nEnter: save and use it" in status_of(screen)
        # Save has the focus, and looks it (issue 40.8): a border of its own when focused
        assert app.focused is save
        focused_border = save.styles.border_top
        await pilot.press("shift+tab")
        assert app.focused is not save and save.styles.border_top != focused_border
        await pilot.press("tab")
        assert app.focused is save
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.status.model == "custom/llama3.1:8b", "the header")
        assert not app.query(".notice.-setup"), "the hint is gone"
        await type_and_send(pilot, "hi")
        await wait_until(pilot, lambda: replies(app) and idle(app), "the reply")
        assert replies(app) == ["Hello from the set-up model"]
    async with GatewayClient(real_gw.url, token=real_gw.token) as checker:
        model = await checker.call("config.get", {"path": "model"})
        key = await checker.call("config.get", {"path": "providers.custom.apiKey"})
    assert model["value"] == {"provider": "custom", "id": "llama3.1:8b"} and key["value"] == "***"
    assert llm.requests[-1].headers.get("authorization") == f"Bearer {SECRET}"
    assert SECRET not in caplog.text and SECRET not in " ".join(notices(app))


async def test_a_refused_key_is_said_with_the_fix_and_can_be_typed_again(
    real_gw: RunningGateway, llm: FakeLLMServer
) -> None:
    """The provider's 401 in one sentence; the key field is empty and ready again; Esc
    steps back one step at a time."""
    llm.api_key = "sk-right"
    async with open_chat(real_gw) as (_, pilot):
        screen = await custom_provider(pilot, llm.openai_base_url, "sk-wrong")
        await wait_until(pilot, lambda: "refused" in status_of(screen), "the refusal")
        assert "refused the API key (401)" in status_of(screen)
        assert "gsv config set providers.custom.apiKey KEY" in status_of(screen)
        assert "press Enter again" in status_of(screen) and "sk-wrong" not in status_of(screen)
        assert screen.step == "url" and screen.query_one("#setup-status").has_class("-error")
        await fill(pilot, "#setup-key", "sk-right")
        await wait_until(pilot, lambda: screen.step == "model", "the models")
        await pilot.press("escape")  # Esc steps back: the URL and key, the providers, out
        assert screen.step == "url" and screen.query_one("#setup-url", Input).has_focus
        await pilot.press("escape")
        assert screen.step == "provider"
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(pilot.app.screen, SetupScreen), "closing")


async def test_an_unreachable_or_bad_url_is_said_plainly(real_gw: RunningGateway) -> None:
    """Nothing listening: "cannot reach"; not http(s): refused; a hosted provider without
    a key: asked for it. None of the failed tries is saved (issue 40.1)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with open_chat(real_gw) as (app, pilot):
        screen = await custom_provider(pilot, f"http://127.0.0.1:{port}/v1", "")
        await wait_until(pilot, lambda: "cannot reach" in status_of(screen), "the error")
        assert "is it running and is the URL right?" in status_of(screen)
        await fill(pilot, "#setup-url", "ftp://h/v1")
        await fill(pilot, "#setup-key", "")
        await wait_until(pilot, lambda: "http(s) URL" in status_of(screen), "the refusal")
        await pilot.press("escape")  # back to the providers
        await pick_provider(pilot, "openai")
        await fill(pilot, "#setup-key", "  ")
        assert status_of(screen) == "openai needs an API key."
        stored = await app.client.call("config.get", {"path": "providers.custom"})
        assert "value" not in stored, "a try that never answered is not saved"


async def test_model_names_and_errors_from_the_provider_show_as_text(
    real_gw: RunningGateway, llm: FakeLLMServer
) -> None:
    """A model named `[bold]…` is listed as written; a failing test call says the
    provider's words (markup included) and offers no Save."""
    llm.models = ["[bold]loud[/bold]", "x[/]"]
    llm.enqueue(ErrorReply(400, "model [red]x[/red] is not loaded"))
    async with open_chat(real_gw) as (_, pilot):
        screen = await custom_provider(pilot, llm.openai_base_url, "", typed=True)
        await wait_until(pilot, lambda: screen.step == "model", "the models")
        options = screen.query_one(ModelList).options
        shown = [str(options.get_option_at_index(i).prompt) for i in range(2)]
        assert shown == ["  [bold]loud[/bold]", "  x[/]"]
        await pilot.press("enter")
        await wait_until(pilot, lambda: "failed" in status_of(screen), "the test's error")
        assert "model [red]x[/red] is not loaded" in status_of(screen)
        assert "Pick another model." in status_of(screen)
        assert not screen.query_one("#setup-save").display


async def test_ollama_not_running_says_how_to_start_it(real_gw: RunningGateway) -> None:
    """Picking Ollama when nothing answers on its port: the reason and `ollama serve`."""
    if ollama_running():
        pytest.skip("an Ollama answers on this machine")
    async with open_chat(real_gw) as (_, pilot):
        screen = await open_setup(pilot)
        await pick_provider(pilot, "ollama")
        await wait_until(pilot, lambda: "cannot reach" in status_of(screen), "the error")
        assert "Start it (ollama serve) and press Enter again" in status_of(screen)
        assert screen.step == "provider"
