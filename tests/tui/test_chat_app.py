"""The chat TUI driven by Pilot against a real gateway (port 0) with a scripted model:
streaming, tool blocks, queued messages, /stop and Esc, the composer's completion and
history."""

from __future__ import annotations

import asyncio
import json

from gsv_cli.tui.app import ChatApp
from gsv_cli.tui.widgets.composer import CommandMenu
from gsv_cli.tui.widgets.messages import ToolBlock
from gsv_cli.tui.widgets.messages import UserMessage
from gsv_cli.tui.widgets.status import Activity
from gsv_core.gateway.server import RunningGateway
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.tui.chat_screen import idle
from tests.tui.chat_screen import notices
from tests.tui.chat_screen import replies
from tests.tui.conftest import KEY
from tests.tui.conftest import SIZE
from tests.tui.conftest import type_and_send
from tests.tui.conftest import wait_until


async def test_streamed_text_appears_incrementally(app: ChatApp, fake: FakeProvider) -> None:
    """The first delta is on screen while the model is still writing; the rest follows."""
    gate = asyncio.Event()
    fake.enqueue("Hello ", gate, "**world**")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        assert app.query(".notice.-setup"), "no key in the config: the setup hint shows"
        await type_and_send(pilot, "hi")
        await wait_until(pilot, lambda: replies(app) == ["Hello "], "the first delta")
        assert app.query_one(Activity).display, "the activity line shows while the run works"
        gate.set()
        await wait_until(pilot, lambda: idle(app), "the run to end")
        assert replies(app) == ["Hello **world**"]
        assert app.status.tokens_in == 10 and app.status.tokens_out == 5
        assert not app.query(".notice.-setup"), "the model answered: the hint is gone"


async def test_tool_blocks_appear_and_settle(app: ChatApp, fake: FakeProvider) -> None:
    """Each tool call becomes a block naming the tool and where it ran; it settles with ✓,
    a failed one with ✗ and its error, expanded."""
    fake.enqueue(
        "Checking.",
        call("gsv__ConfigGet", {"path": "model.id"}),
        call("ghost__Read", {"path": "a.txt"}),
    )
    fake.enqueue("Done.")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        await type_and_send(pilot, "check")
        await wait_until(pilot, lambda: "Done." in replies(app), "the final reply")
        blocks = list(app.query(ToolBlock))
        assert [b.view.tool for b in blocks] == ["ConfigGet", "Read"]
        good, bad = blocks
        assert str(good.title).startswith("✓ ConfigGet · gateway · model.id")
        assert good.collapsed and good.view.duration_ms is not None
        assert str(bad.title).startswith("✗ Read · ghost · a.txt · failed")
        assert not bad.collapsed and "error:" in bad.view.body()
        assert replies(app) == ["Checking.", "Done."]


async def test_a_running_tool_spins_until_its_end_event(app: ChatApp) -> None:
    """A tool block shows a spinner while running, then the outcome and duration."""
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        start = {
            "callId": "c1",
            "name": "node-a__Bash",
            "phase": "start",
            "args": {"command": "make test"},
        }
        await app.chat.on_tool("r1", start)
        block = app.query_one(ToolBlock)
        assert block.has_class("-running") and "Bash · node-a · make test" in str(block.title)
        await app.chat.on_tool(
            "r1", {**start, "phase": "end", "isError": False, "durationMs": 2500, "summary": "ok"}
        )
        assert str(block.title) == "✓ Bash · node-a · make test · 2.5 s"
        assert not block.has_class("-running")


async def test_images_from_read_show_as_a_placeholder_with_size(app: ChatApp) -> None:
    """A Read that returned an image shows `[image name · type · size]`, not base64."""
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        start = {"callId": "c1", "name": "n__Read", "phase": "start", "args": {"path": "cat.png"}}
        end = {
            **start,
            "phase": "end",
            "durationMs": 3,
            "summary": "Image file: cat.png (image/png, 2048 bytes)",
        }
        await app.chat.on_tool("r1", start)
        await app.chat.on_tool("r1", end)
        assert app.query_one(ToolBlock).view.body().endswith("[image cat.png · image/png · 2.0 KB]")


async def test_a_queued_message_shows_queued_until_its_run_starts(
    app: ChatApp, fake: FakeProvider
) -> None:
    """A message sent during a run is marked queued; the mark goes when its run starts."""
    gate = asyncio.Event()
    fake.enqueue("first ", gate, "done")
    fake.enqueue("second reply")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        await type_and_send(pilot, "one")
        await wait_until(pilot, lambda: replies(app) == ["first "], "the first run to stream")
        await type_and_send(pilot, "two")
        second = lambda: list(app.query(UserMessage))[-1]  # noqa: E731
        await wait_until(pilot, lambda: second().queued, "the second message to be queued")
        assert second().queue_position == 1
        assert "queued" in str(second().query_one(".state").render())
        gate.set()
        await wait_until(pilot, lambda: "second reply" in replies(app), "the queued run's reply")
        assert not second().queued


async def test_escape_stops_the_run(app: ChatApp, fake: FakeProvider) -> None:
    """Esc sends /stop: the run ends at once and the chat says it was stopped."""
    fake.enqueue("working on it ", asyncio.Event())  # never released
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        await type_and_send(pilot, "long job")
        await wait_until(pilot, lambda: replies(app) == ["working on it "], "the run to stream")
        await pilot.press("escape")
        await wait_until(pilot, lambda: "Run stopped." in notices(app), "the stop notice")
        await wait_until(pilot, lambda: idle(app), "the run to stop")


async def test_slash_stop_stops_the_run(app: ChatApp, fake: FakeProvider) -> None:
    """Typing /stop does the same as Esc."""
    fake.enqueue("working ", asyncio.Event())
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        await type_and_send(pilot, "long job")
        await wait_until(pilot, lambda: app.chat.busy and replies(app), "the run to stream")
        await type_and_send(pilot, "/stop")
        await wait_until(pilot, lambda: "Run stopped." in notices(app), "the stop notice")
        assert not app.chat.busy


async def test_slash_completion_offers_commands_with_help(app: ChatApp) -> None:
    """Typing `/th` lists think and thinking with their help; Tab completes; the command's
    answer shows and the status bar follows the new thinking level."""
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        await pilot.press("slash", "t", "h")
        menu = app.query_one(CommandMenu)
        await wait_until(pilot, lambda: menu.display, "the completion menu")
        assert [spelling for spelling, _ in menu.matches] == ["think"]
        assert "reasoning level" in menu.matches[0][1].help
        await pilot.press("tab")
        assert app.composer.text == "/think " and not menu.display
        await pilot.press("h", "i", "g", "h", "enter")
        await wait_until(pilot, lambda: app.status.thinking == "high", "the status bar to follow")
        assert any("Thinking level set to high" in text for text in notices(app))


async def test_enter_on_a_complete_command_sends_it(app: ChatApp) -> None:
    """`/status` + Enter sends at once (the menu does not swallow the Enter)."""
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        await type_and_send(pilot, "/status")
        await wait_until(
            pilot,
            lambda: any("Session: agent:main:main" in t for t in notices(app)),
            "the status answer",
        )


async def test_up_and_down_walk_through_sent_messages(app: ChatApp) -> None:
    """Up recalls earlier messages, Down walks back to the draft."""
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        for text in ("first", "second"):
            await type_and_send(pilot, text)
            await wait_until(pilot, lambda: idle(app), "the reply")
        app.composer.insert("draft")
        await pilot.press("up")
        assert app.composer.text == "second"
        await pilot.press("up")
        assert app.composer.text == "first"
        await pilot.press("down", "down")
        assert app.composer.text == "draft"


async def test_shift_enter_and_ctrl_j_make_new_lines(app: ChatApp, fake: FakeProvider) -> None:
    """Ctrl+J and Shift+Enter insert line breaks; Enter sends the whole text."""
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        await pilot.press("a", "ctrl+j", "b", "shift+enter", "c")
        assert app.composer.text == "a\nb\nc"
        await pilot.press("enter")
        await wait_until(pilot, lambda: fake.requests, "the model to be asked")
        assert fake.requests[0].messages[-1]["content"] == "a\nb\nc"
        assert app.composer.text == ""


async def test_a_tool_request_shows_its_block_and_leaves_no_run_busy(
    app: ChatApp, gw: RunningGateway
) -> None:
    """Another client's `tool.request` on this session: its events carry no run (runId
    null). The call shows as a block; nothing is taken for a run that never ends."""
    from tests.gateway.test_nodes import next_event
    from tests.gateway.test_nodes import node_socket

    node = await node_socket(gw, "n1")
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, app.synced.is_set, "the session to load")
            params = {"callId": "by-hand", "tool": "n1__Read", "args": {"path": "x"},
                      "sessionKey": KEY}  # fmt: skip
            await app.client.call("tool.request", params)
            invoke = await next_event(node, "tool.invoke")
            await node.send(json.dumps({"type": "req", "id": "r", "method": "tool.result",
                "params": {"callId": invoke["callId"], "result": {"ok": 1}}}))  # fmt: skip
            await wait_until(
                pilot,
                lambda: [b for b in app.query(ToolBlock) if not b.has_class("-running")],
                "the call's block with its outcome",
            )
            assert not app.chat.busy and app.chat.runs == {}
    finally:
        await node.close()
