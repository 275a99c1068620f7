"""The chat TUI: `make_app(client, session_key)` builds it for `gsv chat` and for tests;
`run_chat()` is what the command runs.

The app owns one GatewayClient (reconnect=True). Workers: `maintain_link` connects (retrying
while the gateway is down), loads the session and, after every lost connection, waits for
the client's reconnect and loads it again; `pump_events` feeds the session's events to the
conversation in order; `send_outbox` sends your messages one at a time, in order. Every
worker catches what can go wrong and says so on screen: errors never end the app.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any, ClassVar

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widget import Widget
from textual.widgets import Footer

from gsv_cli.tui import commands, model_setup, session_info
from gsv_cli.tui.screens.help import HelpScreen
from gsv_cli.tui.screens.sessions import SessionPicker
from gsv_cli.tui.transcript import history_items
from gsv_cli.tui.widgets.approval import ApprovalPrompt
from gsv_cli.tui.widgets.chat_view import ChatView
from gsv_cli.tui.widgets.composer import Composer, ComposerArea
from gsv_cli.tui.widgets.status import Activity, Banner, Status, StatusBar
from gsv_core.client import GatewayClient
from gsv_core.errors import GatewayUnreachable, GsvError, TimedOut, Unauthorized, Unavailable
from gsv_core.protocol import events
from gsv_core.protocol.frames import EventFrame
from gsv_core.protocol.methods import CHAT_SEND, TOOL_APPROVE

log = logging.getLogger(__name__)

CANCELLED = "Run cancelled by user"
SEND_TIMEOUT = 120.0
RETRY_PAUSE = 0.5  # between attempts to load the session while the link is flapping
NODES_EVERY = 30.0
QUIT_WINDOW = 3.0
UNREACHABLE = (
    "Cannot reach the gateway at {url}. Start it with `gsv up` (or `gsv gateway start`); retrying…"
)
RECONNECTING = "Connection to the gateway lost; reconnecting… (messages you send wait for it)"


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


class ChatApp(App[None]):
    CSS_PATH = "gsv.tcss"
    TITLE = "gsv chat"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "quit", "Quit", priority=True),
        Binding("ctrl+c", "ctrl_c", "Quit", show=False, priority=True),
        Binding("escape", "stop", "Stop run"),
        Binding("ctrl+s", "sessions", "Sessions", priority=True),
        Binding("f1", "help", "Help", priority=True),
        Binding("question_mark", "help", "Help", show=False),
        Binding("ctrl+l", "reload", "Reload", show=False),
    ]

    def __init__(
        self, client: GatewayClient, session_key: str, *, url_label: str | None, history_limit: int
    ) -> None:
        super().__init__()
        self.client = client
        self.session_key = session_key
        self.label: str | None = None
        self.history_limit = history_limit
        self.status = Status(url=url_label or client.url, session=session_key)
        self.synced = asyncio.Event()  # set after each load of the session (tests wait on it)
        self._lock = asyncio.Lock()  # one writer of the conversation at a time
        self._outbox: asyncio.Queue[str] = asyncio.Queue()
        self._remote_busy = False  # a run was in progress when the session was loaded
        self._quit_armed = False
        self._setup_hint: Widget | None = None  # shown until the model first answers

    # -- layout -------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield StatusBar(self.status)
        yield Banner()
        yield ChatView(id="chat")
        yield Activity()
        yield ComposerArea(id="composer-area")
        yield Footer()

    @property
    def chat(self) -> ChatView:
        return self.query_one(ChatView)

    @property
    def composer(self) -> Composer:
        return self.query_one(Composer)

    @property
    def banner(self) -> Banner:
        return self.query_one(Banner)

    def on_mount(self) -> None:
        self.composer.focus()
        self.maintain_link()
        self.send_outbox()
        self.set_interval(NODES_EVERY, self.refresh_nodes)

    async def on_unmount(self) -> None:
        await self.client.close()

    # -- the link to the gateway ----------------------------------------------------------
    @work(group="link", exclusive=True, exit_on_error=False)
    async def maintain_link(self) -> None:
        if not self.client.connected and not await self._first_connect():
            return
        self.pump_events()
        await self.sync()
        while True:
            await self.client.wait_disconnected()
            if not self.client.reconnect:
                self._set_connection("offline")
                self.banner.show("The connection to the gateway closed.", "error")
                return
            self._set_connection("reconnecting")
            self.banner.show(RECONNECTING)
            await self.sync()  # waits for the client's reconnect, then loads the session

    async def _first_connect(self) -> bool:
        """Connect, retrying with backoff while nothing listens; False when refused."""
        while True:
            try:
                await self.client.connect()
            except (GatewayUnreachable, Unavailable, TimedOut):
                self._set_connection("offline")
                self.banner.show(UNREACHABLE.format(url=self.status.url), "error")
            except Unauthorized as exc:
                self._set_connection("offline")
                self.banner.show(
                    f"The gateway refused this client: {exc.message}. "
                    "Give the token with --token or GSV_TOKEN (or `gsv init`).",
                    "error",
                )
                return False
            except GsvError as exc:
                self._set_connection("offline")
                self.banner.show(f"Cannot connect to the gateway: {exc.message}", "error")
                return False
            else:
                self.client.backoff.reset()
                return True
            await asyncio.sleep(self.client.backoff.next_delay())

    def _set_connection(self, state: str) -> None:
        self.status.connection = state
        self.query_one(StatusBar).show()

    async def sync(self) -> bool:
        """Load the session from the gateway and show it (after start, a reconnect, a
        switch or /new): the stored conversation, model, tokens, whether a run is on.
        False (and a notice) when the gateway refused, e.g. a malformed session key."""
        self.synced.clear()
        try:
            while True:
                try:
                    info = await session_info.fetch_session(
                        self.client, self.session_key, self.history_limit, timeout=None
                    )
                    nodes = await session_info.count_online_nodes(self.client)
                    break
                except (Unavailable, TimedOut):  # the link dropped again: wait for it
                    await asyncio.sleep(RETRY_PAUSE)
                except GsvError as exc:
                    await self.chat.add_notice(f"Cannot load the session: {exc.message}", "error")
                    return False
            async with self._lock:
                await self._show_session(info, nodes)
            return True
        finally:
            if self.client.connected:
                self._set_connection("connected")
                self.banner.hide()
            self.synced.set()

    async def _show_session(self, info: session_info.SessionInfo, nodes: int) -> None:
        self.session_key, self.label = info.key, info.label
        self._remote_busy = info.processing
        self._show_status(info)
        self.status.nodes = nodes
        self._setup_hint = None
        await self.chat.load_history(history_items(info.messages))
        for approval in info.approvals:  # still waiting for an answer (e.g. after a restart)
            await self.chat.on_approval(approval)
        hidden = info.message_count - len(info.messages)
        if hidden > 0:
            await self.chat.add_notice(
                f"{hidden} earlier messages are not shown.", "dim", at_top=True
            )
        if not info.messages:
            await self.chat.add_notice(
                f"New conversation in {info.key}. F1 shows keys and commands.", "dim"
            )
            provider = model_setup.missing_key(info.config)
            if provider is not None:
                text = model_setup.setup_text(provider)
                self._setup_hint = await self.chat.add_notice(text, "setup")
        self._update_activity()

    def _show_status(self, info: session_info.SessionInfo) -> None:
        self.status.session, self.status.label = info.key, info.label
        self.status.model, self.status.thinking = info.model, info.thinking
        self.status.tokens_in, self.status.tokens_out = info.tokens_in, info.tokens_out
        self.query_one(StatusBar).show()

    @work(group="status", exclusive=True, exit_on_error=False)
    async def refresh_status(self) -> None:
        try:
            info = await session_info.fetch_status(self.client, self.session_key)
        except GsvError as exc:
            log.info("status refresh failed: %s", exc.message)
            return
        self.label = info.label
        self._show_status(info)

    @work(group="nodes", exclusive=True, exit_on_error=False)
    async def refresh_nodes(self) -> None:
        if not self.client.connected:
            return
        try:
            self.status.nodes = await session_info.count_online_nodes(self.client)
        except GsvError as exc:
            log.info("nodes refresh failed: %s", exc.message)
            return
        self.query_one(StatusBar).show()

    # -- events from the gateway ----------------------------------------------------------
    @work(group="events", exclusive=True, exit_on_error=False)
    async def pump_events(self) -> None:
        async for frame in self.client.events():
            try:
                await self.on_gateway_event(frame)
            except Exception:  # one bad event must not end the chat
                log.exception("could not show event %s", frame.event)

    async def on_gateway_event(self, frame: EventFrame) -> None:
        payload = frame.payload if isinstance(frame.payload, dict) else {}
        if payload.get("sessionKey") != self.session_key:
            return  # another session's run
        async with self._lock:
            if frame.event == events.CHAT:
                await self._on_chat(payload)
            elif frame.event == events.CHAT_TOOL:
                await self.chat.on_tool(str(payload.get("runId")), payload.get("tool") or {})
            elif frame.event == events.SESSION_NOTICE and payload.get("kind") == "heartbeat":
                # an alert from the agent's heartbeat: its words, worth reading
                text = str(payload.get("text", ""))
                await self.chat.add_notice(f"**Heartbeat**\n\n{text}", markdown=True)
            elif frame.event == events.SESSION_NOTICE:
                await self.chat.add_notice(str(payload.get("text", "")), "dim")
            elif frame.event == events.TOOL_APPROVAL:
                await self.chat.on_approval(payload)
            self._update_activity()

    async def _on_chat(self, payload: dict[str, Any]) -> None:
        run_id, state = str(payload.get("runId")), payload.get("state")
        if state == events.CHAT_DELTA:
            await self.chat.on_delta(run_id, str(payload.get("text", "")))
        elif state == events.CHAT_PARTIAL:
            await self.chat.on_partial(run_id, payload.get("message") or {})
        elif state == events.CHAT_FINAL:
            self._remote_busy = False
            await self.chat.on_final(run_id, payload.get("message"))
            if self._setup_hint is not None:  # the model answered: the hint was wrong
                await self._setup_hint.remove()
                self._setup_hint = None
            self.status.tokens_in += int((payload.get("usage") or {}).get("input") or 0)
            self.status.tokens_out += int((payload.get("usage") or {}).get("output") or 0)
            self.query_one(StatusBar).show()
        elif state == events.CHAT_ERROR:
            self._remote_busy = False
            await self.chat.on_error(run_id, str(payload.get("error", "")))
            await self._show_run_error(str(payload.get("error") or "the run failed"))
        elif state == events.CHAT_PAUSED and payload.get("approvalId") not in self.chat.approvals:
            # an approval shows as its prompt; any other pause as the gateway's text
            await self.chat.add_notice(_text_of(payload.get("message")) or "The run is paused.")

    async def _show_run_error(self, error: str) -> None:
        if error == CANCELLED:
            await self.chat.add_notice("Run stopped.", "dim")
        elif model_setup.is_setup_error(error):
            await self.chat.add_notice(model_setup.setup_text(error=error), "setup")
        else:
            await self.chat.add_notice(error, "error")

    def _update_activity(self) -> None:
        self.query_one(Activity).set_busy(self.chat.busy or self._remote_busy)

    # -- sending --------------------------------------------------------------------------
    @on(Composer.Submitted)
    async def _submitted(self, event: Composer.Submitted) -> None:
        local = commands.parse_local(event.text)
        if local is not None:
            await self.run_local(local)
        else:
            self._outbox.put_nowait(event.text)

    @work(group="outbox", exclusive=True, exit_on_error=False)
    async def send_outbox(self) -> None:
        while True:
            text = await self._outbox.get()
            try:
                await self.send_message(text)
            except Exception:  # never lose the sender: the next message must still go
                log.exception("sending failed")

    async def send_message(self, text: str) -> None:
        """Send one message; a command's answer is shown, a message's run is followed."""
        run_id = str(uuid.uuid4())
        key = self.session_key
        command_like = commands.is_command_like(text)
        message = None
        if not command_like:
            async with self._lock:
                message = await self.chat.add_user(text)
                self.chat.expect(run_id)
                self._update_activity()
        params = {"sessionKey": key, "message": text, "runId": run_id}
        try:
            result = await self.client.call(CHAT_SEND, params, timeout=SEND_TIMEOUT)
        except GsvError as exc:
            async with self._lock:
                self.chat.runs.pop(run_id, None)
                if message is not None:
                    message.mark_failed(exc.message)
                else:
                    await self.chat.add_notice(f"{text}: not sent: {exc.message}", "error")
                self._update_activity()
            return
        if result.get("status") != "started":
            await self._command_answered(text, run_id, result)
            return
        async with self._lock:
            if message is None:  # `/word` that is no command: the model gets it as text
                message = await self.chat.add_user(text)
                self.chat.expect(run_id)
            if result.get("queued"):
                self.chat.mark_queued(run_id, message, int(result.get("queuePosition") or 1))
            self._update_activity()

    async def _command_answered(self, text: str, run_id: str, result: dict[str, Any]) -> None:
        """A command or directive-only message: echo it and show the answer. After /new or
        /compact the session is loaded again first (so the answer stays on screen)."""
        command = result.get("command")
        if command in commands.RELOADING:
            await self.sync()
        elif command in commands.SETTINGS_CHANGING:
            self.refresh_status()
        async with self._lock:
            self.chat.runs.pop(run_id, None)
            await self.chat.add_notice(f"› {text.strip()}", "dim")
            response, error = result.get("response"), result.get("error")
            if error:
                await self.chat.add_notice(str(error), "error")
            elif response and not _quiet(result):
                await self.chat.add_notice(_hard_breaks(str(response)), markdown=True)
            self._update_activity()

    @on(ApprovalPrompt.Answered)
    def _approval_answered(self, event: ApprovalPrompt.Answered) -> None:
        self.run_worker(
            self.answer_approval(event.prompt, event.decision, event.remember),
            group="approve",
            exit_on_error=False,
        )

    async def answer_approval(
        self, prompt: ApprovalPrompt, decision: str, remember: str | None
    ) -> None:
        """Send `tool.approve`; the gateway's `tool.approval` event settles the prompt."""
        params: dict[str, Any] = {"approvalId": prompt.approval_id, "decision": decision}
        if remember:
            params["remember"] = remember
        try:
            await self.client.call(TOOL_APPROVE, params)
        except GsvError as exc:
            await self.chat.add_notice(f"Cannot answer the approval: {exc.message}", "error")

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

    async def rename(self, label: str) -> None:
        try:
            await session_info.rename(self.client, self.session_key, label)
        except GsvError as exc:
            await self.chat.add_notice(f"Cannot rename: {exc.message}", "error")
            return
        self.label = self.status.label = label or None
        self.query_one(StatusBar).show()
        text = f"Session labelled “{label}”." if label else "Session label removed."
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


def _quiet(result: dict[str, Any]) -> bool:
    """/stop's "Stopped run ..." is followed by the run's own `error` event: say it once."""
    return result.get("command") == "stop" and str(result.get("response", "")).startswith(
        "Stopped run"
    )


def _text_of(message: Any) -> str:
    """The text of a paused event's message (an assistant message or a plain string)."""
    if isinstance(message, str):
        return message
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    blocks = content if isinstance(content, list) else []
    return "".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict))


def _hard_breaks(text: str) -> str:
    """Gateway answers are line-oriented: keep their line breaks in Markdown."""
    return "\n".join(line + "  " if line.strip() else line for line in text.splitlines())
