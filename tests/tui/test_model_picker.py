"""`/model` in the chat (Pilot, a real gateway with its real providers, a fake
OpenAI-compatible server on 127.0.0.1): a picker of the provider's models; choosing one
switches this session (header and next message), and a provider that cannot list its
models is said in its words."""

from __future__ import annotations

import socket
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Input
from textual.widgets import Static

from gsv_cli.tui.screens.model_picker import ModelPicker
from gsv_cli.tui.widgets.model_list import ModelList
from gsv_core.gateway.server import RunningGateway
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import reply
from tests.tui.chat_screen import idle
from tests.tui.chat_screen import notices
from tests.tui.chat_screen import replies
from tests.tui.conftest import KEY
from tests.tui.conftest import open_chat
from tests.tui.conftest import type_and_send
from tests.tui.conftest import wait_until


def fake_model(base_url: str, model: str) -> dict[str, Any]:
    """The config writes for provider `fake` at `base_url` with `model` in use."""
    return {
        "providers.fake": {"api": "openai", "baseUrl": base_url},
        "model": {"provider": "fake", "id": model},
    }


async def open_picker(pilot: Pilot[None]) -> ModelPicker:
    await type_and_send(pilot, "/model")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, ModelPicker), "the picker")
    picker = pilot.app.screen
    assert isinstance(picker, ModelPicker)
    return picker


def listed(picker: ModelPicker) -> list[str]:
    options = picker.query_one(ModelList).options
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


def picker_status(picker: ModelPicker) -> str:
    return str(picker.query_one("#picker-status", Static).render())


async def test_the_picker_switches_this_session(
    real_gw: RunningGateway, llm: FakeLLMServer
) -> None:
    """The provider's models, the one in use marked; filtering and Enter switch the
    session: the header says so at once and the next message goes to that model."""
    llm.models = ["fake-large", "fake-small", "[bold]shout"]
    llm.enqueue(reply("from large"))
    async with open_chat(real_gw, fake_model(llm.openai_base_url, "fake-small")) as (app, pilot):
        assert app.status.model == "fake/fake-small"
        picker = await open_picker(pilot)
        await wait_until(pilot, lambda: len(listed(picker)) == 3, "the models")
        assert listed(picker) == ["  [bold]shout", "  fake-large", "● fake-small"]
        assert picker.query_one(ModelList).highlighted == "fake-small"
        await pilot.press(*"large")
        assert listed(picker) == ["  fake-large"]
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.status.model == "fake/fake-large", "the header")
        assert "Model set to fake/fake-large." in notices(app)
        await type_and_send(pilot, "hi")
        await wait_until(pilot, lambda: replies(app) and idle(app), "the reply")
        settings = (await app.client.call("session.get", {"sessionKey": KEY}))["settings"]
    assert llm.requests[-1].body["model"] == "fake-large"
    assert settings["model"] == {"provider": "fake", "id": "fake-large"}


async def test_a_model_named_with_markup_can_be_chosen(
    real_gw: RunningGateway, llm: FakeLLMServer
) -> None:
    """`[bold]shout` is listed, chosen and named in the header as written."""
    llm.models = ["[bold]shout", "fake-small"]
    async with open_chat(real_gw, fake_model(llm.openai_base_url, "fake-small")) as (app, pilot):
        picker = await open_picker(pilot)
        await wait_until(pilot, lambda: len(listed(picker)) == 2, "the models")
        await pilot.press("up", "enter")  # from the filter line: up to the first
        await wait_until(pilot, lambda: app.status.model == "fake/[bold]shout", "the header")
        assert "fake/[bold]shout · think off" in str(app.query_one("#status-bar").render())


async def test_a_provider_that_cannot_list_is_said_and_escape_closes(
    real_gw: RunningGateway,
) -> None:
    """Nothing listening at the provider's URL: its error and the way out; Esc closes
    the picker without switching."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with open_chat(real_gw, fake_model(f"http://127.0.0.1:{port}/v1", "m1")) as (app, pilot):
        picker = await open_picker(pilot)
        await wait_until(pilot, lambda: "cannot reach" in picker_status(picker), "the error")
        assert "/setup sets up a provider here." in picker_status(picker)
        assert isinstance(picker.focused, Input)
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, ModelPicker), "closing")
        assert app.status.model == "fake/m1"
        got = await app.client.call("session.get", {"sessionKey": KEY})
        assert "model" not in got["settings"]


async def test_a_provider_with_no_models_says_so(
    real_gw: RunningGateway, llm: FakeLLMServer
) -> None:
    """An empty models list is said, not shown as an empty picker."""
    llm.models = []
    async with open_chat(real_gw, fake_model(llm.openai_base_url, "m1")) as (_, pilot):
        picker = await open_picker(pilot)
        await wait_until(pilot, lambda: "no models" in picker_status(picker), "the answer")
        assert picker_status(picker) == "fake offers no models." and listed(picker) == []


async def test_one_model_is_one_model(real_gw: RunningGateway, llm: FakeLLMServer) -> None:
    """The picker's count reads "1 model", not "1 models" (issue 40.8)."""
    llm.models = ["fake-small"]
    async with open_chat(real_gw, fake_model(llm.openai_base_url, "fake-small")) as (_app, pilot):
        picker = await open_picker(pilot)
        await wait_until(pilot, lambda: len(listed(picker)) == 1, "the model")
        assert str(picker.status_line.render()).startswith("1 model ·")
