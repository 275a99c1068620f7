"""Snapshots of the chat at 80x24 (pytest-textual-snapshot; `--snapshot-update` rewrites
them after a deliberate change): the empty chat, a streamed reply with a code block, a tool
call, the banner when no gateway answers, and the setup screen's list of models. Everything on screen is fixed: the address
label, the scripted model's text and token counts, no clocks, no ids. A tool call's duration
is the one figure the gateway measures (and a busy CI machine once took 0.1 s over it), so
that test checks it arrived and then pins it before the picture is taken."""

from __future__ import annotations

import socket
from collections.abc import Callable
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input
from textual.widgets import OptionList

from gsv_cli.tui.app import ChatApp
from gsv_cli.tui.app import make_app
from gsv_cli.tui.screens.setup import SetupScreen
from gsv_cli.tui.widgets.messages import AssistantMessage
from gsv_cli.tui.widgets.messages import ToolBlock
from gsv_cli.tui.widgets.status import Activity
from gsv_cli.tui.widgets.status import Banner
from gsv_core.gateway.server import RunningGateway
from tests.fakes.llm_server import fake_llm_server
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.threaded import threaded_gateway
from tests.tui.conftest import KEY
from tests.tui.conftest import SIZE
from tests.tui.conftest import URL_LABEL
from tests.tui.conftest import quick_client
from tests.tui.conftest import type_and_send
from tests.tui.conftest import wait_until

Snap = Callable[..., bool]

CODE_REPLY = (
    "Here is the function:\n\n",
    "```python\ndef add(a: int, b: int) -> int:\n",
    "    return a + b\n```\n\n",
    "It adds **two** numbers.",
)


@pytest.fixture
def fake() -> FakeProvider:
    return FakeProvider()


@pytest.fixture
def live(tmp_path: Path, fake: FakeProvider) -> Iterator[RunningGateway]:
    with threaded_gateway(tmp_path / "data" / "gsv.db", provider_factory=fake.factory) as running:
        yield running


def chat_app(url: str) -> ChatApp:
    return make_app(quick_client(url), KEY, url_label=URL_LABEL)


async def _loaded(pilot: Pilot[Any]) -> None:
    app = pilot.app
    assert isinstance(app, ChatApp)
    await wait_until(pilot, app.synced.is_set, "the session to load")


def _conversation(message: str, last_reply: str) -> Callable[[Pilot[Any]], Any]:
    async def run_before(pilot: Pilot[Any]) -> None:
        app = pilot.app
        assert isinstance(app, ChatApp)
        await _loaded(pilot)
        await type_and_send(pilot, message)
        await wait_until(
            pilot,
            lambda: any(last_reply in reply.source for reply in app.query(AssistantMessage)),
            "the reply",
        )
        await wait_until(pilot, lambda: not app.query_one(Activity).display, "the run to end")

    return run_before


def test_empty_chat(snap_compare: Snap, live: RunningGateway) -> None:
    """A new session: the status bar, the welcome line, the model setup hint, the composer."""
    assert snap_compare(chat_app(live.url), terminal_size=SIZE, run_before=_loaded)


def test_streamed_reply_with_a_code_block(
    snap_compare: Snap, live: RunningGateway, fake: FakeProvider
) -> None:
    """A reply streamed in four deltas, with a highlighted Python block."""
    fake.enqueue(*CODE_REPLY)
    app = chat_app(live.url)
    assert snap_compare(app, terminal_size=SIZE, run_before=_conversation("show me add", "two"))


def test_tool_call(snap_compare: Snap, live: RunningGateway, fake: FakeProvider) -> None:
    """A reply with a settled tool block between its two turns."""
    fake.enqueue("Let me look.", call("gsv__ConfigGet", {"path": "model.id"}))
    fake.enqueue("You are on the default model.")
    app = chat_app(live.url)
    converse = _conversation("which model?", "default model")

    async def run_before(pilot: Pilot[Any]) -> None:
        await converse(pilot)
        block = pilot.app.query_one(ToolBlock)
        duration = block.view.duration_ms
        assert block.view.ok is True and isinstance(duration, int) and duration >= 0
        block.finish(True, block.view.summary, 0)  # the machine's speed is not the layout
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_no_gateway_banner(snap_compare: Snap) -> None:
    """Nothing listening: the error banner says how to start the gateway."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = chat_app(f"ws://127.0.0.1:{port}/ws")

    async def banner_shown(pilot: Pilot[Any]) -> None:
        await wait_until(pilot, lambda: pilot.app.query_one(Banner).display, "the banner")

    assert snap_compare(app, terminal_size=SIZE, run_before=banner_shown)


def test_setup_lists_the_providers_models(snap_compare: Snap, tmp_path: Path) -> None:
    """The setup screen after a provider answered: filter line, models, default highlighted."""
    with (
        fake_llm_server() as llm,
        threaded_gateway(tmp_path / "setup" / "gsv.db") as real,
    ):
        llm.models = ["gpt-5-mini", "llama3.1:8b", "qwen2.5"]

        async def models_listed(pilot: Pilot[Any]) -> None:
            await _loaded(pilot)
            await pilot.press("f2")
            await wait_until(pilot, lambda: isinstance(pilot.app.screen, SetupScreen), "setup")
            screen = pilot.app.screen
            assert isinstance(screen, SetupScreen)
            providers = screen.query_one("#setup-providers", OptionList)
            providers.highlighted = providers.get_option_index("custom")
            await pilot.press("enter")
            screen.query_one("#setup-url", Input).value = llm.openai_base_url
            await pilot.press("enter", "enter")  # the URL, then no key
            await wait_until(pilot, lambda: screen.step == "model", "the models")

        assert snap_compare(chat_app(real.url), terminal_size=SIZE, run_before=models_listed)
