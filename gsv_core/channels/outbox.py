"""Sending to messengers: the agent's replies routed to the channel a run came from
(spec 8.5), direct sends (pairing prompts, gsv__Message), splitting before the platform
limit, a per-account rate limit, and typing indicators kept alive while a run works."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from gsv_core.channels.base import Channel, OutboundMessage, Peer
from gsv_core.channels.host import ChannelHost
from gsv_core.channels.shaping import RateLimiter, error_line, reply_text, split_text
from gsv_core.errors import Unavailable
from gsv_core.protocol import events
from gsv_core.storage.channels import ANSWERED, ChannelStore

log = logging.getLogger(__name__)

TYPING_EVERY = 4.0  # seconds; platforms drop a typing indicator after about five
TYPING_MAX = 600.0
DEFAULT_ACCOUNT = "default"


class Outbox:
    def __init__(
        self,
        store: ChannelStore,
        host: ChannelHost,
        adapters: dict[str, Channel],
        settings: Callable[[str], dict[str, Any]],
    ) -> None:
        self.store = store
        self.host = host
        self.adapters = adapters
        self.settings = settings
        self._typing: dict[str, asyncio.Task[None]] = {}
        self._limiter = RateLimiter()
        self._queues: dict[tuple[str, str], asyncio.Queue[tuple[str, dict[str, Any]]]] = {}
        self._workers: set[asyncio.Task[None]] = set()

    def close(self) -> None:
        for task in [*self._typing.values(), *self._workers]:
            task.cancel()
        self._typing.clear()

    def post(self, event: str, payload: dict[str, Any]) -> None:
        """Queue a session event for its channel; each (channel, account) delivers in order
        (a partial reply before the final one) without holding up the session."""
        context = payload.get("channelContext")
        if not isinstance(context, dict) or "channel" not in context:
            return
        key = (str(context["channel"]), str(context.get("accountId", DEFAULT_ACCOUNT)))
        queue = self._queues.get(key)
        if queue is None:
            queue = self._queues[key] = asyncio.Queue()
            worker = asyncio.create_task(self._deliver_in_order(queue))
            self._workers.add(worker)
            worker.add_done_callback(self._workers.discard)
        queue.put_nowait((event, payload))

    async def _deliver_in_order(self, queue: asyncio.Queue[tuple[str, dict[str, Any]]]) -> None:
        while True:
            event, payload = await queue.get()
            try:
                await self.deliver_event(event, payload)
            except Exception:  # per item: a failed send must not stop later replies
                log.exception("delivering a reply to %s failed", payload.get("channelContext"))

    async def deliver_event(self, event: str, payload: dict[str, Any]) -> None:
        """Route a session event of a channel-born run to its channel (spec 8.5): partial
        and final replies are sent, an error is told in one short line (fix of 18.18)."""
        context = payload.get("channelContext")
        if event != events.CHAT or not isinstance(context, dict) or "channel" not in context:
            return
        state, run_id = payload.get("state"), str(payload.get("runId") or "")
        if state not in ("partial", "paused", "final", "error"):
            return
        if state == "error":
            text = error_line(str(payload.get("error", "the run failed")))
        else:
            text = reply_text(payload.get("message"))
        if state in ("final", "error"):
            self.stop_typing(run_id)
        reply_to = context.get("inboundMessageId")
        if text:
            await self.send_text(context["channel"], context.get("accountId", DEFAULT_ACCOUNT),
                                 Peer.from_wire(context["peer"]), text,
                                 reply_to=str(reply_to) if reply_to else None)  # fmt: skip
        journal_id = context.get("journalId")
        if state in ("final", "error") and isinstance(journal_id, int):
            await self.store.mark(journal_id, ANSWERED, self.host.now_ms())

    async def send_text(
        self, channel: str, account_id: str, peer: Peer, text: str, *, reply_to: str | None = None
    ) -> list[str]:
        """Send text to a peer through whichever adapter serves the account (in-process or
        external), split before the platform's limit and paced by the rate limit."""
        adapter = self.adapters.get(channel)
        limit = adapter.capabilities.max_text if adapter else 4000
        per_minute = int(self.settings(channel).get("sendRatePerMinute", 30))
        sent: list[str] = []
        for index, piece in enumerate(split_text(text, limit)):
            await self._limiter.wait(f"{channel}:{account_id}", per_minute)
            first_reply = reply_to if index == 0 else None
            message_id = await self._send_one(channel, account_id, peer, piece, first_reply)
            if message_id:
                sent.append(message_id)
        return sent

    async def _send_one(
        self, channel: str, account_id: str, peer: Peer, text: str, reply_to: str | None
    ) -> str | None:
        adapter = self.adapters.get(channel)
        if adapter is not None and any(s.account_id == account_id for s in adapter.status()):
            return await adapter.send(account_id, OutboundMessage(peer, text, reply_to))
        external = self.host.external_peer(channel, account_id)
        if external is None:
            raise Unavailable(
                f'Channel "{channel}" (account: {account_id}) is not connected. '
                f"Start it with `gsv channels start {channel} {account_id}`."
            )
        message: dict[str, Any] = {"text": text}
        if reply_to:
            message["replyToId"] = reply_to
        external.send_event(events.CHANNEL_OUTBOUND, {
            "channel": channel, "accountId": account_id, "peer": peer.to_wire(),
            "sessionKey": "", "message": message,
        })  # fmt: skip
        return None

    def start_typing(self, run_id: str, channel: str, account_id: str, peer: Peer) -> None:
        """Keep "typing..." showing for a run until its reply or error goes out."""
        self.stop_typing(run_id)
        self._typing[run_id] = asyncio.create_task(self._keep_typing(channel, account_id, peer))

    def stop_typing(self, run_id: str) -> None:
        task = self._typing.pop(run_id, None)
        if task is not None:
            task.cancel()

    async def _keep_typing(self, channel: str, account_id: str, peer: Peer) -> None:
        loop = asyncio.get_running_loop()
        until = loop.time() + TYPING_MAX
        while loop.time() < until:
            await self._set_typing(channel, account_id, peer, True)
            await asyncio.sleep(TYPING_EVERY)

    async def _set_typing(self, channel: str, account_id: str, peer: Peer, typing: bool) -> None:
        try:
            adapter = self.adapters.get(channel)
            if adapter is not None and adapter.capabilities.typing:
                await adapter.set_typing(account_id, peer, typing)
                return
            external = self.host.external_peer(channel, account_id)
            if external is not None:
                external.send_event(events.CHANNEL_TYPING, {
                    "channel": channel, "accountId": account_id, "peer": peer.to_wire(),
                    "sessionKey": "", "typing": typing,
                })  # fmt: skip
        except Exception:  # typing is cosmetic: never let it fail a run
            log.debug("typing indicator failed on %s", channel, exc_info=True)
