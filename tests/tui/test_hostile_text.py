"""Hostile text in the chat TUI (Pilot, real gateway, scripted model): replies, tool names,
arguments and errors, notices and your own message show as written, with control
characters as visible stand-ins, and nothing crashes."""

from __future__ import annotations

from textual.widget import Widget
from textual.widgets import Markdown

from gsv_cli.tui.app import ChatApp
from gsv_cli.tui.widgets.messages import AssistantMessage
from gsv_cli.tui.widgets.messages import Notice
from gsv_cli.tui.widgets.messages import ToolBlock
from gsv_cli.tui.widgets.messages import UserMessage
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.hostile import HOSTILE
from tests.hostile import RAW_CONTROL
from tests.hostile import SURROGATE
from tests.tui.conftest import SIZE
from tests.tui.conftest import type_and_send
from tests.tui.conftest import wait_until

DELTAS = [f"{hostile.written} | " for hostile in HOSTILE]
SHOWN_REPLY = "".join(f"{hostile.shown} | " for hostile in HOSTILE)
ARGS = {"path": "[bold]\x1b]52;c;ZXZpbA==\x07"}
TOOL = "gsv__No[/]\x1b[2J"


def shown(widget: Widget) -> str:
    """What a widget shows: its Markdown source, else its rendered text."""
    if isinstance(widget, Markdown):
        return widget.source
    return str(widget.render())


def chat_texts(app: ChatApp) -> list[str]:
    kinds = (UserMessage, AssistantMessage, Notice, ToolBlock)
    texts = [shown(widget) for kind in kinds for widget in app.chat.query(kind)]
    texts += [str(block.title) for block in app.chat.query(ToolBlock)]
    texts += [shown(static) for static in app.chat.query(".tool-body, .text")]
    return texts


async def test_hostile_replies_and_tool_calls_show_literally(
    app: ChatApp, fake: FakeProvider
) -> None:
    """A streamed reply, a tool the model named with escapes and its error, and your own
    message: every string shown as written, no raw control left in any widget."""
    fake.enqueue(*DELTAS, call(TOOL, ARGS))
    fake.enqueue("[/] done \x9b31m")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        await type_and_send(pilot, "[/]\x1b[31m hi")
        await wait_until(pilot, lambda: len(app.query(AssistantMessage)) == 2, "both replies")
        await pilot.pause()
        first, last = (reply.source for reply in app.query(AssistantMessage))
        assert first == SHOWN_REPLY
        assert last == "[/] done \\x9b31m"
        block = app.query_one(ToolBlock)
        assert "No[/]␛[2J" in str(block.title)
        body = block.view.body()
        assert "path: [bold]␛]52;c;ZXZpbA==␇" in shown(block.query_one(".tool-body"))
        assert "Unknown native tool" in body
        assert shown(app.query_one(UserMessage).query_one(".text")) == "[/]␛[31m hi"
        assert not [text for text in chat_texts(app) if RAW_CONTROL.search(text)]


async def test_events_with_lone_surrogates_show_as_escapes(app: ChatApp) -> None:
    """Text that cannot be encoded (a lone surrogate) in a delta, a tool call and a
    notice: shown as `\\ud800`, and the app keeps running."""
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        start = {"callId": "c1", "name": "n__Read", "phase": "start", "args": ARGS}
        await app.chat.on_delta("r1", SURROGATE.written)
        await app.chat.on_tool("r1", {**start, "args": {"path": SURROGATE.written}})
        end = {**start, "phase": "end", "isError": True, "summary": SURROGATE.written}
        await app.chat.on_tool("r1", end)
        await app.chat.on_final("r1", {"content": [{"type": "text", "text": SURROGATE.written}]})
        await app.chat.add_notice(SURROGATE.written, "error")
        await pilot.pause()
        assert app.query_one(AssistantMessage).source == SURROGATE.shown
        assert f"error: {SURROGATE.shown}" in shown(
            app.query_one(ToolBlock).query_one(".tool-body")
        )
        assert shown(app.query(Notice).last()) == f"✗ {SURROGATE.shown}"
        assert not [text for text in chat_texts(app) if RAW_CONTROL.search(text)]
        assert app.is_running


async def test_a_link_in_a_reply_shows_its_target_before_anything_opens(
    app: ChatApp, fake: FakeProvider
) -> None:
    """Link text can hide where it goes: the first click shows the target (neutralised)
    instead of opening it."""
    fake.enqueue("see [the docs](http://evil.example/\x1b[2J)")
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        await type_and_send(pilot, "links?")
        await wait_until(pilot, lambda: app.query(AssistantMessage), "the reply")
        reply = app.query_one(AssistantMessage)
        reply.post_message(Markdown.LinkClicked(reply, "http://evil.example/␛[2J"))
        await wait_until(pilot, lambda: app.screen.query("Toast"), "the link's target")
        toast = str(app.screen.query("Toast").first().render())
        assert "http://evil.example/␛[2J" in toast and "Click it again" in toast
        assert app.chat.shown_link == "http://evil.example/␛[2J"


async def test_a_replace_delta_starts_the_reply_over(app: ChatApp) -> None:
    """A `delta` with `replace` (a cut stream answered again otherwise) shows its text in
    place of the reply's, and later deltas follow it."""
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        await app.chat.on_delta("r1", "Forty two")
        await app.chat.on_delta("r1", "It is ", replace=True)
        await app.chat.on_delta("r1", "42.")
        await pilot.pause()
        [reply] = app.query(AssistantMessage)
        await reply.settle()
        assert reply.streamed == reply.source == "It is 42."
