"""Sending to messengers: the agent's replies routed to the channel a run came from
(kept in the database until they went out: gsv_core.channels.reply_queue), direct
sends (pairing prompts, gsv__Message), splitting before the platform limit, a
per-account rate limit, and typing indicators kept alive while a run works.

Each message and edit tells the in-process adapter to send it without link previews
unless the owner turned `channels.<name>.linkPreviews` on (read at each send, so a change
applies at once; docs/channels.md, Link previews).

An approval prompt (a `paused` chat event with an `approvalId`) goes out with Allow /
Deny buttons where the adapter has them; once the approval settles -- answered by
anyone, anywhere, or expired -- the prompt is edited to say how it ended and loses its
buttons."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import Any

from gsv_core.channels.base import Action
from gsv_core.channels.base import ButtonChannel
from gsv_core.channels.base import MessageEdit
from gsv_core.channels.base import OutboundMessage
from gsv_core.channels.base import Peer
from gsv_core.channels.parts import ChannelParts
from gsv_core.channels.reply_queue import ReplyQueue
from gsv_core.channels.shaping import RateLimiter
from gsv_core.channels.shaping import error_line
from gsv_core.channels.shaping import reply_text
from gsv_core.channels.shaping import split_text
from gsv_core.config import setting
from gsv_core.errors import Unavailable
from gsv_core.protocol import events
from gsv_core.storage.channels import ANSWERED
from gsv_core.storage.outbox import NewReply
from gsv_core.storage.outbox import StoredReply

log = logging.getLogger(__name__)

TYPING_EVERY = 4.0  # seconds; platforms drop a typing indicator after about five
TYPING_MAX = 600.0
DEFAULT_ACCOUNT = "default"
APPROVE_PREFIX = "approve:"  # action ids: approve:<approvalId>:allow | approve:<approvalId>:deny
OUTCOME_LINES = {
    "approved": "✅ Approved.",
    "denied": "❌ Denied.",
    "expired": "⌛ Expired: nobody answered in time.",
    "cancelled": "⏹ Cancelled: the run stopped.",
}


def approval_actions(approval_id: str) -> tuple[Action, ...]:
    return (
        Action(f"{APPROVE_PREFIX}{approval_id}:allow", "Allow", "primary"),
        Action(f"{APPROVE_PREFIX}{approval_id}:deny", "Deny", "danger"),
    )


def parse_approval_action(action_id: str) -> tuple[str, str] | None:
    """(approval id, allow | deny) of an approval button's id; None for anything else."""
    if not action_id.startswith(APPROVE_PREFIX):
        return None
    approval_id, _, decision = action_id.removeprefix(APPROVE_PREFIX).partition(":")
    if not approval_id or decision not in ("allow", "deny"):
        return None
    return approval_id, decision


class Outbox:
    def __init__(self, parts: ChannelParts) -> None:
        self.parts = parts
        self.replies = ReplyQueue(
            parts.queued, self._send_queued, parts.host.now_ms, self._max_age_ms
        )
        self._typing: dict[str, asyncio.Task[None]] = {}
        self._limiter = RateLimiter()
        self._queues: dict[tuple[str, str], asyncio.Queue[tuple[str, dict[str, Any]]]] = {}
        self._workers: set[asyncio.Task[Any]] = set()
        self._outcomes: dict[str, asyncio.Future[str]] = {}  # approval id -> its outcome

    def close(self) -> None:
        for task in [*self._typing.values(), *self._workers]:
            task.cancel()
        self._typing.clear()
        self._outcomes.clear()

    def start_retries(self) -> None:
        """Retry the replies left waiting (after a restart, they go out from here)."""
        self.spawn(self.replies.run())

    def _max_age_ms(self) -> int:
        return int(setting(self.parts.host.config(), "channels.outboxMaxAgeHours")) * 3_600_000

    def spawn(self, work: Awaitable[Any]) -> asyncio.Future[Any]:
        task = asyncio.ensure_future(work)
        self._workers.add(task)
        task.add_done_callback(self._workers.discard)
        return task

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
            self.spawn(self._deliver_in_order(queue))
        approval_id = payload.get("approvalId")
        paused = payload.get("state") == "paused" and isinstance(approval_id, str)
        if paused and self._buttons(key[0]):
            self._watch(str(approval_id))  # now, while it is surely still pending
        queue.put_nowait((event, payload))

    def _buttons(self, channel: str) -> bool:
        adapter = self.parts.adapters.get(channel)
        return isinstance(adapter, ButtonChannel) and adapter.capabilities.buttons

    def _watch(self, approval_id: str) -> asyncio.Future[str] | None:
        """The outcome of a pending approval, awaited in a task of ours (None once it has
        settled)."""
        if approval_id not in self._outcomes:
            outcome = self.parts.host.approval_outcome(approval_id)
            if outcome is None:
                return None
            task = self._outcomes[approval_id] = self.spawn(outcome)
            task.add_done_callback(lambda _: self._outcomes.pop(approval_id, None))
        return self._outcomes[approval_id]

    async def _deliver_in_order(self, queue: asyncio.Queue[tuple[str, dict[str, Any]]]) -> None:
        while True:
            event, payload = await queue.get()
            try:
                await self.deliver_event(event, payload)
            except Exception:  # per item: a failed send must not stop later replies
                log.exception("delivering a reply to %s failed", payload.get("channelContext"))

    async def deliver_event(self, event: str, payload: dict[str, Any]) -> None:
        """Route a session event of a channel-born run to its channel: partial
        and final replies are sent, an error is told in one short line."""
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
        approval_id = payload.get("approvalId")
        key = str(payload.get("sessionKey") or "")  # external adapters hear it too
        journal_id = context.get("journalId")
        answers = None  # (journal entry, run): the message this run's end answers
        if state in ("final", "error") and isinstance(journal_id, int):
            answers = (journal_id, run_id or None)
        if text and state == "paused" and isinstance(approval_id, str):
            await self._prompt(context, text, approval_id, str(reply_to) if reply_to else None,
                               key)  # fmt: skip
        elif text:  # kept in the database until it went out (gsv_core.channels.reply_queue)
            pieces = self._queued_pieces(context, text, str(reply_to) if reply_to else None, key)
            await self.replies.put(pieces, answers)
            return
        if answers is not None:
            await self.parts.store.mark(answers[0], ANSWERED, self.parts.host.now_ms())

    def _queued_pieces(
        self, context: dict[str, Any], text: str, reply_to: str | None, session_key: str
    ) -> list[NewReply]:
        channel = str(context["channel"])
        account_id = str(context.get("accountId", DEFAULT_ACCOUNT))
        peer = Peer.from_wire(context["peer"]).to_wire()
        return [
            NewReply(channel, account_id, peer, piece, reply_to if not index else None, session_key)
            for index, piece in enumerate(self._pieces(channel, text))
        ]

    async def _send_queued(self, stored: StoredReply) -> None:
        """One stored piece, paced like every send to its account."""
        reply = stored.reply
        per_minute = int(self.parts.settings(reply.channel).get("sendRatePerMinute", 30))
        await self._limiter.wait(f"{reply.channel}:{reply.account_id}", per_minute)
        message = OutboundMessage(
            Peer.from_wire(reply.peer), reply.text, reply.reply_to,
            link_previews=self._link_previews(reply.channel),
        )  # fmt: skip
        await self._send_one(reply.channel, reply.account_id, message, reply.session_key)

    async def _prompt(
        self,
        context: dict[str, Any],
        text: str,
        approval_id: str,
        reply_to: str | None,
        session_key: str = "",
    ) -> None:
        """Send an approval prompt, with buttons where the adapter has them; edit it when
        the approval settles."""
        channel = str(context["channel"])
        account_id = str(context.get("accountId", DEFAULT_ACCOUNT))
        peer = Peer.from_wire(context["peer"])
        outcome = self._watch(approval_id) if self._buttons(channel) else None
        if outcome is None:
            await self.send_text(channel, account_id, peer, text, reply_to=reply_to,
                                 session_key=session_key)  # fmt: skip
            return
        sent = await self.send_text(channel, account_id, peer, text, reply_to=reply_to,
                                     actions=approval_actions(approval_id),
                                     session_key=session_key)  # fmt: skip
        if sent:
            last_piece = self._pieces(channel, text)[-1]
            self.spawn(self._settle(outcome, channel, account_id, peer, sent[-1], last_piece))

    async def _settle(
        self,
        outcome: Awaitable[str],
        channel: str,
        account_id: str,
        peer: Peer,
        message_id: str,
        text: str,
    ) -> None:
        result = await outcome
        adapter = self.parts.adapters.get(channel)
        if not isinstance(adapter, ButtonChannel):
            return
        line = OUTCOME_LINES.get(result, f"Ended: {result}.")
        room = adapter.capabilities.max_text - len(line) - 3  # the edit must fit one message
        if len(text) > room:
            text = text[: max(0, room - 1)].rstrip() + "…"
        try:
            previews = self._link_previews(channel)
            edit = MessageEdit(account_id, peer, message_id, f"{text}\n\n{line}", previews)
            await adapter.edit(edit)
        except Exception:  # the outcome itself stands; only its display failed
            log.warning("editing the approval prompt on %s failed", channel, exc_info=True)

    def _link_previews(self, channel: str) -> bool:
        """Whether the owner let this channel's platform preview links (off unless set)."""
        return self.parts.settings(channel).get("linkPreviews") is True

    def _pieces(self, channel: str, text: str) -> list[str]:
        adapter = self.parts.adapters.get(channel)
        return split_text(text, adapter.capabilities.max_text if adapter else 4000)

    async def send_text(
        self,
        channel: str,
        account_id: str,
        peer: Peer,
        text: str,
        *,
        reply_to: str | None = None,
        actions: tuple[Action, ...] = (),
        session_key: str = "",
        lane: str = "",
    ) -> list[str]:
        """Send text to a peer through whichever adapter serves the account (in-process or
        external), split before the platform's limit and paced by the rate limit; any
        `actions` go under the last piece."""
        per_minute = int(self.parts.settings(channel).get("sendRatePerMinute", 30))
        previews = self._link_previews(channel)
        pieces = self._pieces(channel, text)
        sent: list[str] = []
        for index, piece in enumerate(pieces):
            # `lane`: strangers' prompts have their own budget, so they never delay the
            # owner's replies
            await self._limiter.wait(f"{channel}:{account_id}{lane}", per_minute)
            message = OutboundMessage(
                peer, piece, reply_to if index == 0 else None,
                actions if index == len(pieces) - 1 else (), link_previews=previews,
            )  # fmt: skip
            message_id = await self._send_one(channel, account_id, message, session_key)
            if message_id:
                sent.append(message_id)
        return sent

    async def _send_one(
        self, channel: str, account_id: str, outbound: OutboundMessage, session_key: str = ""
    ) -> str | None:
        adapter = self.parts.adapters.get(channel)
        peer, text, reply_to = outbound.peer, outbound.text, outbound.reply_to_id
        if adapter is not None and any(s.account_id == account_id for s in adapter.status()):
            return await adapter.send(account_id, outbound)
        external = self.parts.host.external_peer(channel, account_id)
        if external is None:
            raise Unavailable(
                f'Channel "{channel}" (account: {account_id}) is not connected. '
                f"Start it with `gsv channels start {channel} {account_id}`."
            )
        message: dict[str, Any] = {"text": text}
        if reply_to:
            message["replyToId"] = reply_to
        if outbound.link_previews:  # absent: previews off, as for the built-in adapters
            message["linkPreviews"] = True
        external.send_event(events.CHANNEL_OUTBOUND, {
            "channel": channel, "accountId": account_id, "peer": peer.to_wire(),
            "sessionKey": session_key, "message": message,
        })  # fmt: skip
        return None

    def start_typing(
        self, run_id: str, channel: str, account_id: str, peer: Peer, session_key: str = ""
    ) -> None:
        """Keep "typing..." showing for a run until its reply or error goes out."""
        self.stop_typing(run_id)
        self._typing[run_id] = asyncio.create_task(
            self._keep_typing(channel, account_id, peer, session_key)
        )

    def stop_typing(self, run_id: str) -> None:
        task = self._typing.pop(run_id, None)
        if task is not None:
            task.cancel()

    async def _keep_typing(
        self, channel: str, account_id: str, peer: Peer, session_key: str
    ) -> None:
        loop = asyncio.get_running_loop()
        until = loop.time() + TYPING_MAX
        while loop.time() < until:
            await self._set_typing(channel, account_id, peer, True, session_key)
            await asyncio.sleep(TYPING_EVERY)

    async def _set_typing(
        self, channel: str, account_id: str, peer: Peer, typing: bool, session_key: str = ""
    ) -> None:
        try:
            adapter = self.parts.adapters.get(channel)
            if adapter is not None and adapter.capabilities.typing:
                await adapter.set_typing(account_id, peer, typing)
                return
            external = self.parts.host.external_peer(channel, account_id)
            if external is not None:
                external.send_event(events.CHANNEL_TYPING, {
                    "channel": channel, "accountId": account_id, "peer": peer.to_wire(),
                    "sessionKey": session_key, "typing": typing,
                })  # fmt: skip
        except Exception:  # typing is cosmetic: never let it fail a run
            log.debug("typing indicator failed on %s", channel, exc_info=True)
