"""`ChatBase`: the state the chat app's parts share (the client, the session shown, the
status, the lock that keeps one writer of the conversation) and the widgets they use.

The app is built in layers, each owning one concern and using the ones below it:
`feed.py` (the gateway's events), `link.py` (connecting and loading the session),
`sending.py` (your messages and approval answers), `model_actions.py` (the model picker
and setup), `app.py` (layout, local commands, keys).
"""

from __future__ import annotations

import asyncio
import logging

from textual import work
from textual.app import App
from textual.widget import Widget

from gsv_cli.tui import session_info
from gsv_cli.tui.widgets.chat_view import ChatView
from gsv_cli.tui.widgets.composer import Composer
from gsv_cli.tui.widgets.status import Activity
from gsv_cli.tui.widgets.status import Banner
from gsv_cli.tui.widgets.status import Status
from gsv_cli.tui.widgets.status import StatusBar
from gsv_core.client import GatewayClient
from gsv_core.errors import GsvError

log = logging.getLogger(__name__)


class ChatBase(App[None]):
    """The chat app's shared state; `ChatApp` is the whole app."""

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

    @property
    def chat(self) -> ChatView:
        return self.query_one(ChatView)

    @property
    def composer(self) -> Composer:
        return self.query_one(Composer)

    @property
    def banner(self) -> Banner:
        return self.query_one(Banner)

    def show_status_bar(self) -> None:
        self.query_one(StatusBar).show()

    def _update_activity(self) -> None:
        self.query_one(Activity).set_busy(self.chat.busy or self._remote_busy)

    def _show_status(self, info: session_info.SessionInfo) -> None:
        self.status.session, self.status.label = info.key, info.label
        self.status.model, self.status.thinking = info.model, info.thinking
        self.status.tokens_in, self.status.tokens_out = info.tokens_in, info.tokens_out
        self.status.spent_today = info.spent_today
        self.show_status_bar()

    @work(group="status", exclusive=True, exit_on_error=False)
    async def refresh_status(self) -> None:
        """Load the status bar's session details again: after a model switch, a setup, a
        config change, a run (it used up a one-message model) and now and then (another
        client may have switched this session's model)."""
        if not self.client.connected:
            return  # the session is loaded again once the link is back
        key = self.session_key
        try:
            info = await session_info.fetch_status(self.client, key)
        except GsvError as exc:
            log.info("status refresh failed: %s", exc.message)
            return
        if key != self.session_key:
            return  # switched meanwhile: the switch shows the new session
        self.label = info.label
        self._show_status(info)
