"""Sessions in the chat TUI: switching, the picker, /rename, /new, and events of other
sessions."""

from __future__ import annotations

import asyncio

from gsv_cli.tui.app import ChatApp
from gsv_cli.tui.screens.sessions import SessionPicker
from gsv_cli.tui.widgets.messages import UserMessage
from gsv_cli.tui.widgets.status import Banner
from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from tests.fakes.provider import FakeProvider
from tests.tui.chat_screen import idle
from tests.tui.chat_screen import notices
from tests.tui.chat_screen import replies
from tests.tui.conftest import KEY
from tests.tui.conftest import SIZE
from tests.tui.conftest import type_and_send
from tests.tui.conftest import wait_until
from tests.waiting import WAIT


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
        async with asyncio.timeout(WAIT):
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


def _followed(gw: RunningGateway) -> list[frozenset[str]]:
    """The sessions each client socket narrowed its events to (`chat.subscribe`)."""
    clients = gw.gateway.registry.clients.values()
    return [peer.watching for peer in clients if peer.watching is not None]


async def test_the_chat_follows_only_the_session_it_shows(app: ChatApp, gw: RunningGateway) -> None:
    """The chat asks the gateway for its own session's events only, and again after a
    switch: a busy gateway's other sessions are not streamed to it."""
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        assert _followed(gw) == [frozenset({KEY})]
        await type_and_send(pilot, "/switch agent:main:other")
        await wait_until(
            pilot,
            lambda: app.session_key == "agent:main:other" and app.synced.is_set(),
            "the switch",
        )
        assert _followed(gw) == [frozenset({"agent:main:other"})]
