"""The chat TUI: `make_app(client, session_key)` builds it for `gsv chat` and for tests;
`run_chat()` is what the command runs.

The app owns one GatewayClient (reconnect=True). It is built in layers, each a module:
`chat_base.py` (shared state) < `feed.py` < `link.py` < `sending.py` < `model_actions.py` <
this module (layout, handlers of what the widgets post, local commands and keys).

Workers: `maintain_link` connects (retrying while the gateway is down), loads the session
and, after every lost connection, waits for the client's reconnect and loads it again;
`pump_events` feeds the session's events to the conversation in order; `send_outbox` sends
your messages one at a time, in order. Every worker catches what can go wrong and says so
on screen: errors never end the app.
"""

from __future__ import annotations

from typing import Any
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.binding import BindingType
from textual.widgets import Footer

from gsv_cli.tui import commands
from gsv_cli.tui import session_info
from gsv_cli.tui.model_actions import ModelActions
from gsv_cli.tui.screens.help import HelpScreen
from gsv_cli.tui.screens.search import SearchScreen
from gsv_cli.tui.screens.sessions import SessionPicker
from gsv_cli.tui.widgets.approval import ApprovalPrompt
from gsv_cli.tui.widgets.chat_view import ChatView
from gsv_cli.tui.widgets.composer import Composer
from gsv_cli.tui.widgets.composer import ComposerArea
from gsv_cli.tui.widgets.status import Activity
from gsv_cli.tui.widgets.status import Banner
from gsv_cli.tui.widgets.status import StatusBar
from gsv_core.client import GatewayClient
from gsv_core.errors import GsvError
from gsv_core.protocol.methods import CHAT_SEND

NODES_EVERY = 30.0
STATUS_EVERY = 30.0
QUIT_WINDOW = 3.0


def make_app(
    client: GatewayClient,
    session_key: str,
    *,
    url_label: str | None = None,
    history_limit: int = session_info.HISTORY_LIMIT,
) -> ChatApp:
    """The chat app for `session_key` over `client` (connected or not: it connects itself,
    and closes it when it exits). `url_label` is the gateway address the status bar shows
    (default: the client's URL)."""
    return ChatApp(client, session_key, url_label=url_label, history_limit=history_limit)


async def run_chat(url: str, token: str | None, session_key: str) -> None:
    """`gsv chat` without a message: the full-screen chat until you quit."""
    client = GatewayClient(url, token=token, reconnect=True)
    try:
        await make_app(client, session_key).run_async()
    finally:
        await client.close()  # also when the app failed to start


class ChatApp(ModelActions):
    CSS_PATH = "gsv.tcss"
    TITLE = "gsv chat"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "quit", "Quit", priority=True),
        Binding("ctrl+c", "ctrl_c", "Quit", show=False, priority=True),
        Binding("escape", "stop", "Stop run"),
        Binding("ctrl+s", "sessions", "Sessions", priority=True),
        Binding("f1", "help", "Help", priority=True),
        Binding("f2", "setup", "Set up model", show=False, priority=True),
        Binding("question_mark", "help", "Help", show=False),
        Binding("ctrl+l", "reload", "Reload", show=False),
    ]

    def compose(self) -> ComposeResult:
        yield StatusBar(self.status)
        yield Banner()
        yield ChatView(id="chat")
        yield Activity()
        yield ComposerArea(id="composer-area")
        yield Footer()

    def on_mount(self) -> None:
        self.composer.focus()
        self.maintain_link()
        self.send_outbox()
        self.set_interval(NODES_EVERY, self.refresh_nodes)
        # the gateway sends no event when another client changes this session's model
        self.set_interval(STATUS_EVERY, self.refresh_status)

    async def on_unmount(self) -> None:
        await self.client.close()

    # -- sending --------------------------------------------------------------------------
    @on(Composer.Submitted)
    async def _submitted(self, event: Composer.Submitted) -> None:
        local = commands.parse_local(event.text)
        if commands.opens_model_picker(event.text):
            self.action_models()
        elif local is not None:
            await self.run_local(local)
        else:
            self._outbox.put_nowait(event.text)

    @on(ApprovalPrompt.Answered)
    def _approval_answered(self, event: ApprovalPrompt.Answered) -> None:
        self.run_worker(
            self.answer_approval(event.prompt, event.decision, event.remember),
            group="approve",
            exit_on_error=False,
        )

    # -- local commands and keys ----------------------------------------------------------
    async def run_local(self, command: commands.LocalCommand) -> None:
        if command.name == "quit":
            self.exit()
        elif command.name == "sessions":
            self.action_sessions()
        elif command.name == "switch":
            if command.args:
                await self.switch_session(command.args)
            else:
                await self.chat.add_notice("Usage: /switch KEY (or Ctrl+S to pick)", "error")
        elif command.name == "rename":
            await self.rename(command.args)
        elif command.name == "search":
            await self.search(command.args)
        elif command.name == "setup":
            self.action_setup()

    async def rename(self, label: str) -> None:
        try:
            await session_info.rename(self.client, self.session_key, label)
        except GsvError as exc:
            await self.chat.add_notice(f"Cannot rename: {exc.message}", "error")
            return
        self.label = self.status.label = label or None
        self.show_status_bar()
        text = f"Session labelled “{label}”." if label else "Session label removed."
        await self.chat.add_notice(text, "dim")

    async def search(self, query: str) -> None:
        if not query:
            await self.chat.add_notice("Usage: /search QUERY", "error")
            return

        def picked(hit: dict[str, Any] | None) -> None:
            if hit:
                self.run_worker(self.open_hit(hit), group="link-sync", exit_on_error=False)

        self.push_screen(SearchScreen(self.client, query), picked)

    async def open_hit(self, hit: dict[str, Any]) -> None:
        """A search hit's session, scrolled to the message when it is still shown."""
        key = str(hit["sessionKey"])
        if key != self.session_key:
            await self.switch_session(key)
        at = hit.get("at")
        if self.session_key != key or (isinstance(at, int) and self.chat.reveal(at)):
            return
        if hit.get("archived"):
            where = f" It is archived in {hit['archive']}." if hit.get("archive") else ""
            text = f"That message is no longer in this session's history.{where}"
        else:
            text = "That message is not shown here: it is older than the messages loaded."
        await self.chat.add_notice(text, "dim")

    async def switch_session(self, key: str) -> None:
        previous = self.session_key
        self.session_key = key.strip()
        if not await self.sync():
            self.session_key = previous  # stay where we were

    def action_sessions(self) -> None:
        def picked(key: str | None) -> None:
            if key and key != self.session_key:
                self.run_worker(self.switch_session(key), group="link-sync", exit_on_error=False)
            else:
                self.refresh_status()  # a rename in the picker shows in the status bar

        self.push_screen(SessionPicker(self.client, self.session_key, self.label), picked)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_reload(self) -> None:
        self.run_worker(self.sync(), group="link-sync", exit_on_error=False)

    def action_stop(self) -> None:
        if self.chat.busy or self._remote_busy:
            self.run_worker(self._stop(), group="stop", exit_on_error=False)

    async def _stop(self) -> None:
        try:
            result = await self.client.call(
                CHAT_SEND, {"sessionKey": self.session_key, "message": "/stop"}
            )
        except GsvError as exc:
            await self.chat.add_notice(f"Cannot stop the run: {exc.message}", "error")
            return
        if not str(result.get("response", "")).startswith("Stopped run"):
            await self.chat.add_notice(str(result.get("response") or result.get("error")), "dim")

    def action_ctrl_c(self) -> None:
        """Copy the selection if there is one; else the first press warns, the second quits."""
        selected = self.screen.get_selected_text() or self.composer.selected_text
        if selected:
            self.copy_to_clipboard(selected)
            self.notify("Copied.", timeout=QUIT_WINDOW)
            return
        if self._quit_armed:
            self.exit()
            return
        self._quit_armed = True
        self.notify("Press Ctrl+C again to quit (or Ctrl+Q).", timeout=QUIT_WINDOW)
        self.set_timer(QUIT_WINDOW, self._disarm_quit)

    def _disarm_quit(self) -> None:
        self._quit_armed = False
