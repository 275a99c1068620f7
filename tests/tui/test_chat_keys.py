"""Keys and layout of the chat TUI: F1, Ctrl+C, Ctrl+Q, long sessions, terminal sizes,
NO_COLOR."""

from __future__ import annotations

import pytest

from gsv_cli.tui.app import ChatApp
from gsv_cli.tui.app import make_app
from gsv_cli.tui.screens.help import HelpScreen
from gsv_cli.tui.widgets.messages import ToolBlock
from gsv_cli.tui.widgets.messages import UserMessage
from gsv_core.client import GatewayClient
from tests.fakes.provider import FakeProvider
from tests.tui.chat_screen import idle
from tests.tui.chat_screen import notices
from tests.tui.chat_screen import replies
from tests.tui.conftest import KEY
from tests.tui.conftest import SIZE
from tests.tui.conftest import URL_LABEL
from tests.tui.conftest import type_and_send
from tests.tui.conftest import wait_until


async def test_f1_and_question_mark_show_the_keys(app: ChatApp) -> None:
    """F1 opens the help anywhere; `?` opens it when not typing; Esc closes it."""
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("question_mark")
        assert app.composer.text == "?" and not isinstance(app.screen, HelpScreen)
        app.chat.focus()
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)


async def test_ctrl_c_twice_quits(app: ChatApp) -> None:
    """One Ctrl+C only warns; a second one quits."""
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        await pilot.press("ctrl+c")
        assert app.return_code is None
        await pilot.press("ctrl+c")
        await wait_until(pilot, lambda: app.return_code is not None, "the app to quit")
    assert app.return_code == 0


async def test_ctrl_c_copies_a_selection_instead_of_quitting(app: ChatApp) -> None:
    """With text selected, Ctrl+C copies it and does not arm quitting."""
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        app.composer.insert("copy me")
        app.composer.select_all()
        await pilot.press("ctrl+c")
        assert app.clipboard == "copy me"
        app.composer.clear()
        await pilot.press("ctrl+c")
        assert app.return_code is None, "the copy did not count as the first press"


async def test_a_long_session_shows_its_latest_messages(
    client: GatewayClient, fake: FakeProvider
) -> None:
    """Only the last `history_limit` stored messages are loaded, with a note saying so."""
    app = make_app(client, KEY, url_label=URL_LABEL, history_limit=2)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        for text in ("one", "two"):
            await type_and_send(pilot, text)
            await wait_until(pilot, lambda: idle(app), "the reply")
        app.synced.clear()
        await pilot.press("ctrl+l")
        await wait_until(pilot, app.synced.is_set, "the reload")
        assert [m.text for m in app.query(UserMessage)] == ["two"]
        assert notices(app)[0] == "2 earlier messages are not shown."


async def test_ctrl_q_quits(app: ChatApp) -> None:
    """Ctrl+Q quits at once."""
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+q")
        await wait_until(pilot, lambda: app.return_code is not None, "the app to quit")


async def test_the_layout_survives_small_and_large_terminals(
    app: ChatApp, fake: FakeProvider
) -> None:
    """At 80x24 and after resizing smaller and larger, the status bar, the conversation
    and the composer all stay on screen."""
    fake.enqueue("x " * 400)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        await type_and_send(pilot, "long")
        await wait_until(pilot, lambda: idle(app) and replies(app), "the reply")
        for width, height in ((60, 18), (120, 40), (80, 24)):
            await pilot.resize_terminal(width, height)
            await pilot.pause()
            composer = app.composer.region
            assert composer.height >= 1 and composer.bottom <= height
            assert app.query_one("#status-bar").region.y == 0
            assert app.chat.region.height > 0


async def test_no_color_keeps_states_readable(
    monkeypatch: pytest.MonkeyPatch, client: GatewayClient
) -> None:
    """Under NO_COLOR the app renders without colour, and states still read as text."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app(client, KEY, url_label=URL_LABEL)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        assert app.no_color
        start = {"callId": "c", "name": "n__Bash", "phase": "start", "args": {"command": "false"}}
        await app.chat.on_tool("r", start)
        await app.chat.on_tool(
            "r", {**start, "phase": "end", "isError": True, "durationMs": 5, "summary": "exit 1"}
        )
        assert str(app.query_one(ToolBlock).title).startswith("✗ Bash · n · false · failed")
