"""The chat TUI driven by Pilot against a real gateway (port 0) with a scripted model:
streaming, tool blocks, queued messages, /stop and Esc, commands, session switching,
reconnecting after a gateway restart, and errors that never end the app."""

from __future__ import annotations

import asyncio
import socket
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Button

from gsv_cli.tui.app import ChatApp, make_app
from gsv_cli.tui.screens.help import HelpScreen
from gsv_cli.tui.screens.sessions import SessionPicker
from gsv_cli.tui.widgets.approval import ApprovalPrompt
from gsv_cli.tui.widgets.composer import CommandMenu
from gsv_cli.tui.widgets.messages import AssistantMessage, Notice, ToolBlock, UserMessage
from gsv_cli.tui.widgets.status import Activity, Banner
from gsv_core.client import GatewayClient
from gsv_core.errors import ProviderFailed
from gsv_core.gateway.server import RunningGateway, ServerConfig, serve
from gsv_core.localconfig import generate_token, set_secret
from tests.fakes.provider import Fail, FakeProvider, call
from tests.tui.conftest import KEY, SIZE, URL_LABEL, quick_client, type_and_send, wait_until


def replies(app: ChatApp) -> list[str]:
    return [reply.source for reply in app.query(AssistantMessage)]


def idle(app: ChatApp) -> bool:
    """No run in progress and the event that ended the last one fully shown (hiding the
    activity line is the last thing the app does for an event)."""
    return not app.chat.busy and not app.query_one(Activity).display


def notices(app: ChatApp) -> list[str]:
    return [str(n.text) for n in app.query(".notice")]  # type: ignore[attr-defined]


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


async def test_switching_sessions_loads_their_history(app: ChatApp, fake: FakeProvider) -> None:
    """Ctrl+S lists the sessions; choosing one shows its stored conversation."""
    fake.enqueue("reply in main")
    fake.enqueue("reply in other")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        await type_and_send(pilot, "hello main")
        await wait_until(pilot, lambda: "reply in main" in replies(app), "the main reply")
        await type_and_send(pilot, "/switch agent:main:other")
        await wait_until(
            pilot,
            lambda: app.session_key == "agent:main:other" and app.synced.is_set(),
            "the switch",
        )
        assert replies(app) == []
        await type_and_send(pilot, "hello other")
        await wait_until(pilot, lambda: "reply in other" in replies(app), "the other reply")
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, SessionPicker), "the picker")
        picker = app.screen
        assert isinstance(picker, SessionPicker)
        await wait_until(pilot, lambda: len(picker.sessions) == 2, "the session list")
        main_index = [s["sessionKey"] for s in picker.sessions].index(KEY)
        picker.query_one("#session-list").highlighted = main_index  # type: ignore[attr-defined]
        await pilot.press("enter")
        await wait_until(
            pilot, lambda: app.session_key == KEY and app.synced.is_set(), "the switch back"
        )
        assert replies(app) == ["reply in main"]
        assert [m.text for m in app.query(UserMessage)] == ["hello main"]


async def test_switching_to_a_malformed_key_keeps_the_session(app: ChatApp) -> None:
    """A key the gateway refuses (it holds a space) is reported; the chat stays put."""
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        await type_and_send(pilot, "/switch bad key")
        await wait_until(
            pilot, lambda: any("Cannot load the session" in t for t in notices(app)), "the error"
        )
        assert app.session_key == KEY
        assert app.status.connection == "connected" and not app.query_one(Banner).display
        await type_and_send(pilot, "/switch")
        await wait_until(
            pilot, lambda: "Usage: /switch KEY (or Ctrl+S to pick)" in notices(app), "the usage"
        )


async def test_the_picker_renames_and_creates_sessions(app: ChatApp, client: GatewayClient) -> None:
    """In the picker, r labels the highlighted session (session.patch) and n starts a new
    named one."""
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        await pilot.press("ctrl+s")
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, SessionPicker) and app.screen.sessions,
            "the picker",
        )
        await pilot.press("r")
        for key in "Work":
            await pilot.press(key)
        await pilot.press("enter")
        listed = lambda: client.call("sessions.list", {})  # noqa: E731
        async with asyncio.timeout(20):
            while not any(s.get("label") == "Work" for s in (await listed())["sessions"]):
                await pilot.pause(0.01)
        await pilot.press("n", *"ideas", "enter")
        await wait_until(
            pilot,
            lambda: app.session_key == "agent:main:ideas" and app.synced.is_set(),
            "the new session",
        )
        assert "New conversation in agent:main:ideas" in " ".join(notices(app))


async def test_slash_rename_labels_the_session(app: ChatApp, client: GatewayClient) -> None:
    """/rename LABEL stores the label and shows it in the status bar."""
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        await type_and_send(pilot, "/rename Project X")
        await wait_until(pilot, lambda: app.status.label == "Project X", "the label")
        got = await client.call("session.get", {"sessionKey": KEY})
        assert got["label"] == "Project X"


async def test_new_starts_afresh_and_says_so(app: ChatApp, fake: FakeProvider) -> None:
    """/new archives the conversation: the chat empties and shows the gateway's answer."""
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        await type_and_send(pilot, "remember this")
        await wait_until(pilot, lambda: idle(app) and replies(app), "the reply")
        await type_and_send(pilot, "/new")
        await wait_until(
            pilot,
            lambda: any("Session reset. Archived 2 messages." in t for t in notices(app)),
            "the answer",
        )
        assert replies(app) == [] and not app.query(UserMessage)


async def test_events_of_other_sessions_are_ignored(
    app: ChatApp, gw: RunningGateway, fake: FakeProvider
) -> None:
    """A run in another session (another client) leaves this chat untouched."""
    fake.enqueue("not for you")
    fake.enqueue("for you")
    async with app.run_test(size=SIZE) as pilot, GatewayClient(gw.url, token=gw.token) as other:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        events = other.events()
        sent = await other.call(
            "chat.send", {"sessionKey": "agent:main:elsewhere", "message": "psst"}
        )
        async for frame in events:
            if (
                frame.payload.get("runId") == sent["runId"]
                and frame.payload.get("state") == "final"
            ):
                break
        await type_and_send(pilot, "hi")
        await wait_until(pilot, lambda: "for you" in replies(app), "this session's reply")
        assert replies(app) == ["for you"]


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


async def ask_for_config_reads(client: GatewayClient, fake: FakeProvider, reply: str) -> None:
    """A policy rule that makes gsv__ConfigGet wait for a human (no node needed), and a
    model that calls it, then says `reply`."""
    rule = {"id": "ask-config", "tool": "gsv__ConfigGet", "decision": "ask", "reason": "test"}
    if not client.connected:
        await client.connect()
    await client.call("config.set", {"path": "toolApproval.rules", "value": [rule]})
    fake.enqueue(call("gsv__ConfigGet", {"path": "model.id"}))
    fake.enqueue(reply)


def approval_prompts(app: ChatApp) -> list[ApprovalPrompt]:
    return list(app.query(ApprovalPrompt))


async def ask_in_chat(pilot: Pilot[None], app: ChatApp) -> ApprovalPrompt:
    """Send a message whose run asks for approval; the prompt that shows."""
    await wait_until(pilot, app.synced.is_set, "the session to load")
    await type_and_send(pilot, "read the model")
    await wait_until(pilot, lambda: approval_prompts(app), "the approval prompt")
    return approval_prompts(app)[0]


async def test_an_approval_shows_buttons_and_allow_runs_the_tool(
    app: ChatApp, client: GatewayClient, fake: FakeProvider
) -> None:
    """A tool call that asks shows its prompt (tool, reason) once, not also as a notice;
    Allow answers it, the prompt says Approved and the run goes on."""
    await ask_for_config_reads(client, fake, "Read it.")
    async with app.run_test(size=SIZE) as pilot:
        prompt = await ask_in_chat(pilot, app)
        assert prompt.tool == "gsv__ConfigGet" and "Why: test" in prompt.describe()
        assert not any("Approval needed" in text for text in notices(app)), "shown once"
        assert app.composer.has_focus, "the prompt does not steal focus"
        await pilot.click("#allow")
        await wait_until(pilot, lambda: "Read it." in replies(app), "the run to finish")
        assert prompt.outcome == "approved" and "✓ Approved" in prompt.describe()
        assert not prompt.query(Button), "a settled prompt has no buttons left"
        assert str(app.query(ToolBlock)[0].title).startswith("✓ ConfigGet")


async def test_deny_refuses_the_call(
    app: ChatApp, client: GatewayClient, fake: FakeProvider
) -> None:
    """Deny: the prompt says Denied and the tool block fails with "denied by user"."""
    await ask_for_config_reads(client, fake, "Fine, I will not.")
    async with app.run_test(size=SIZE) as pilot:
        await ask_in_chat(pilot, app)
        await pilot.click("#deny")
        await wait_until(pilot, lambda: "Fine, I will not." in replies(app), "the run to end")
        assert approval_prompts(app)[0].outcome == "denied"
        block = app.query(ToolBlock)[0]
        assert block.view.ok is False and "denied by user" in block.view.body()


async def test_a_pending_approval_shows_when_the_chat_opens_and_settles_from_elsewhere(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider
) -> None:
    """An approval asked before the chat opened shows on load; answering it from another
    client (`gsv approvals`) settles the prompt here too."""
    await ask_for_config_reads(client, fake, "Done.")
    await client.call("chat.send", {"sessionKey": KEY, "message": "read it"})
    pending: list[dict[str, object]] = []
    async with asyncio.timeout(20):
        while not pending:
            pending = (await client.call("tool.approvals"))["approvals"]
            await asyncio.sleep(0.02)
    app = make_app(quick_client(gw.url), KEY, url_label=URL_LABEL)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        assert [p.approval_id for p in approval_prompts(app)] == [pending[0]["approvalId"]]
        await client.call(
            "tool.approve", {"approvalId": pending[0]["approvalId"], "decision": "allow"}
        )
        await wait_until(
            pilot, lambda: approval_prompts(app)[0].outcome == "approved", "the prompt to settle"
        )


async def test_answering_an_expired_approval_says_so(
    app: ChatApp, client: GatewayClient, fake: FakeProvider
) -> None:
    """Clicking Allow after the approval was settled elsewhere shows the gateway's error."""
    await ask_for_config_reads(client, fake, "Done.")
    async with app.run_test(size=SIZE) as pilot:
        prompt = await ask_in_chat(pilot, app)
        await app.answer_approval(prompt, "deny", None)  # someone else answered first
        await app.answer_approval(prompt, "allow", None)
        await wait_until(
            pilot,
            lambda: any("Cannot answer the approval" in t for t in notices(app)),
            "the error notice",
        )


async def test_a_heartbeat_alert_shows_in_the_main_session(
    app: ChatApp, client: GatewayClient, fake: FakeProvider
) -> None:
    """A heartbeat that finds something to say shows its words in the main session's chat."""
    fake.enqueue("The backup job failed last night.")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        await client.call(
            "workspace.write", {"path": "HEARTBEAT.md", "content": "- check the backup log\n"}
        )
        result = await client.call("heartbeat.trigger", {"agentId": "main"})
        assert result["ok"], result
        await wait_until(
            pilot,
            lambda: any("The backup job failed last night." in t for t in notices(app)),
            "the heartbeat notice",
        )
        assert any(t.startswith("**Heartbeat**") for t in notices(app))


async def test_stopping_the_run_cancels_its_approval_prompt(
    app: ChatApp, client: GatewayClient, fake: FakeProvider
) -> None:
    """Esc while an approval waits: the run stops and the prompt says Cancelled at once."""
    await ask_for_config_reads(client, fake, "never said")
    async with app.run_test(size=SIZE) as pilot:
        prompt = await ask_in_chat(pilot, app)
        await pilot.press("escape")
        await wait_until(pilot, lambda: prompt.outcome == "cancelled", "the prompt to settle")
        assert "Cancelled: the run stopped" in prompt.describe()
        assert (await client.call("tool.approvals"))["approvals"] == []
