"""The chat app's link to the gateway: connecting (retrying while the gateway is down),
loading the session and showing it, and loading it again after every lost connection;
the status bar's session, model, tokens and node count."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from textual import work

from gsv_cli.tui import model_setup
from gsv_cli.tui import session_info
from gsv_cli.tui.feed import EventFeed
from gsv_cli.tui.transcript import history_items
from gsv_core.errors import GatewayUnreachable
from gsv_core.errors import GsvError
from gsv_core.errors import TimedOut
from gsv_core.errors import Unauthorized
from gsv_core.errors import Unavailable
from gsv_core.protocol import methods as m

log = logging.getLogger(__name__)

RETRY_PAUSE = 0.5  # between attempts to load the session while the link is flapping
UNREACHABLE = (
    "Cannot reach the gateway at {url}. Start it with `gsv up` (or `gsv gateway start`); retrying…"
)
RECONNECTING = "Connection to the gateway lost; reconnecting… (messages you send wait for it)"


class GatewayLink(EventFeed):
    """Connecting and loading the session for `ChatApp`; once connected, the feed of
    events runs."""

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
        self.show_status_bar()

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
            await self._follow(info.key)
            return True
        finally:
            if self.client.connected:
                self._set_connection("connected")
                self.banner.hide()
            self.synced.set()

    async def _follow(self, key: str) -> None:
        """Hear only this session's conversation from now on (`chat.subscribe`), asked
        after every load, a reconnect's too. If it fails the chat hears every session
        and still shows only its own (`on_gateway_event`)."""
        params = {"sessionKeys": [key]}
        with contextlib.suppress(GsvError):
            await self.client.call(m.CHAT_SUBSCRIBE, params, timeout=session_info.RPC_TIMEOUT)

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
            provider = model_setup.missing_key(info.config, info.provider)
            if provider is not None:
                text = model_setup.setup_text(provider)
                self._setup_hint = await self.chat.add_notice(text, "setup")
        self._update_activity()

    @work(group="nodes", exclusive=True, exit_on_error=False)
    async def refresh_nodes(self) -> None:
        if not self.client.connected:
            return
        try:
            self.status.nodes = await session_info.count_online_nodes(self.client)
        except GsvError as exc:
            log.info("nodes refresh failed: %s", exc.message)
            return
        self.show_status_bar()
