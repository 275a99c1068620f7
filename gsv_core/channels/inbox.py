"""Receiving from messengers: every inbound message is stored
in the journal before the adapter hears "received", then processed in order per account:
access policy and pairing, mention gating in groups, routing to its session, the
envelope and attachments, and the hand-over to the chat pipeline. After a restart the
journal is replayed so every message is answered. A message id seen before (the same
channel, account and id) is a duplicate and is not processed again, across restarts, for
`JOURNAL_RETENTION_DAYS` after it was answered.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from typing import Any

from gsv_core.authority import GUEST
from gsv_core.authority import KEY
from gsv_core.authority import OWNER
from gsv_core.channels import inbound as pipeline
from gsv_core.channels.base import InboundMessage
from gsv_core.channels.host import ChannelTurn
from gsv_core.channels.outbox import Outbox
from gsv_core.channels.parts import ChannelParts
from gsv_core.channels.shaping import error_line
from gsv_core.config import setting
from gsv_core.errors import GsvError
from gsv_core.errors import InvalidParams
from gsv_core.pairing import AWAITING_APPROVAL
from gsv_core.pairing import PAIR
from gsv_core.pairing import decide
from gsv_core.pairing import is_owner
from gsv_core.pairing import pairing_ttl_ms
from gsv_core.protocol import events
from gsv_core.routing import RoutingSettings
from gsv_core.routing import route_inbound
from gsv_core.storage.channels import ANSWERED
from gsv_core.storage.channels import DISPATCHED
from gsv_core.storage.channels import DROPPED
from gsv_core.storage.channels import AccountRecord
from gsv_core.storage.channels import JournalEntry
from gsv_core.storage.usage import DAY_MS
from gsv_core.timezones import user_zone

log = logging.getLogger(__name__)

STRANGERS = ":strangers"  # the rate-limit lane of pairing prompts
# how long an answered or dropped message is remembered, so that the same message
# delivered again (a platform or bridge retrying after a restart) is known as a duplicate;
# platforms redeliver within hours (Telegram keeps an update for 24 h). The default of
# `channels.journalRetentionDays`.
JOURNAL_RETENTION_DAYS = 30
MAX_STRANGER_PROMPTS = 50  # prompts waiting on that lane at most; more are not answered


@dataclass
class _Work:
    entry_id: int
    message: InboundMessage
    done: asyncio.Future[dict[str, Any]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class Inbox:
    def __init__(self, parts: ChannelParts, outbox: Outbox) -> None:
        self.parts = parts
        self.outbox = outbox
        self._queues: dict[tuple[str, str], asyncio.Queue[_Work]] = {}
        self._workers: set[asyncio.Task[None]] = set()
        self._stranger_prompts: set[asyncio.Task[None]] = set()
        self.last_context: dict[str, dict[str, Any]] = {}  # session key -> channel context
        self._forgotten_at = 0  # when old journal entries were last forgotten (epoch ms)

    async def close(self) -> None:
        tasks = [*self._workers, *self._stranger_prompts]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _account(self, channel: str, account_id: str) -> AccountRecord:
        for record in await self.parts.store.accounts():
            if (record.channel, record.account_id) == (channel, account_id):
                return record
        return AccountRecord(channel, account_id, False, {}, None, None)

    async def receive(self, message: InboundMessage, wait: bool = False) -> dict[str, Any]:
        """Journal a message and queue it for processing; with `wait`, return the
        pipeline's result (channel.inbound does), else `{status: "accepted"}`."""
        if not message.message_id:
            raise InvalidParams(
                "channel, accountId, peer, and message required (message.id is empty)"
            )
        entry_id, new = await self.parts.store.record(
            message.channel, message.account_id, message.message_id,
            pipeline.to_wire(message), self.parts.host.now_ms(),
        )  # fmt: skip
        if not new:
            return {"status": "duplicate"}
        if self.parts.host.now_ms() - self._forgotten_at >= DAY_MS:
            await self.forget_old()
        work = _Work(entry_id, message)
        self._queue_for(message.channel, message.account_id).put_nowait(work)
        if not wait:
            return {"status": "accepted"}
        return await asyncio.shield(work.done)

    def _queue_for(self, channel: str, account_id: str) -> asyncio.Queue[_Work]:
        key = (channel, account_id)
        queue = self._queues.get(key)
        if queue is None:
            queue = self._queues[key] = asyncio.Queue()
            task = asyncio.create_task(
                self._worker(queue), name=f"gsv-inbound-{channel}-{account_id}"
            )
            self._workers.add(task)
            task.add_done_callback(self._workers.discard)
        return queue

    async def _worker(self, queue: asyncio.Queue[_Work]) -> None:
        while True:
            work = await queue.get()
            try:
                result = await self._process(work.entry_id, work.message)
            except Exception as exc:  # per item: log, tell the sender, go on
                log.exception("inbound message %s failed", work.entry_id)
                result = {"status": "error", "error": "internal error"}
                await self._safe_reply(work.message, error_line(f"Sorry, that failed: {exc}"))
                await self.parts.store.mark(work.entry_id, DROPPED, self.parts.host.now_ms())
            if not work.done.done():
                work.done.set_result(result)

    async def _process(self, entry_id: int, message: InboundMessage) -> dict[str, Any]:
        now = self.parts.host.now_ms()
        settings = self.parts.settings(message.channel)
        sender_id = message.sender.id if message.sender else message.peer.id
        decision = decide(message.channel, sender_id, message.peer.id, message.peer.kind, settings)
        if decision.verdict == PAIR:
            return await self._ask_pairing(entry_id, message, sender_id)
        if decision.verdict != "allow":
            await self.parts.store.mark(entry_id, DROPPED, now)
            return {"status": "blocked", "reason": decision.reason}
        groups = settings.get("groups") or {}
        if not pipeline.wakes_agent(message, bool(groups.get("requireMention", True))):
            await self.parts.store.mark(entry_id, DROPPED, now)
            return {"status": "ignored", "reason": "not mentioned"}
        return await self._dispatch(entry_id, message, sender_id)

    async def _ask_pairing(
        self, entry_id: int, message: InboundMessage, sender_id: str
    ) -> dict[str, Any]:
        ttl = pairing_ttl_ms(self.parts.host.config())
        sender_name = pipeline.sender_label(message) if message.sender else message.peer.name
        first = await self.parts.pairing.request(
            message.channel, message.account_id, sender_id, sender_name,
            message.peer.to_wire(), message.text, self.parts.host.now_ms(), ttl,
        )  # fmt: skip
        if first:
            self._prompt_stranger(message)
        await self.parts.store.mark(entry_id, DROPPED, self.parts.host.now_ms())
        return {"status": "pending_pairing", "senderId": sender_id}

    async def _dispatch(
        self, entry_id: int, message: InboundMessage, sender_id: str
    ) -> dict[str, Any]:
        routing = RoutingSettings.from_config(self.parts.host.config())
        route = route_inbound(
            message.channel,
            message.account_id,
            message.peer.kind,
            message.peer.id,
            routing,
            sender_id,
        )
        key = route.session_key
        authority = self._authority(message.channel, sender_id)
        context: dict[str, Any] = {
            "channel": message.channel,
            "accountId": message.account_id,
            "peer": message.peer.to_wire(),
            "inboundMessageId": message.message_id,
            "journalId": entry_id,
            "agentId": route.agent_id,
            "senderId": sender_id,
            KEY: authority,
        }
        if authority == OWNER:  # where background output goes: never to a guest
            self.last_context[key] = context
        await self._touch(message)
        text, images = await self._content(message, key, authority)
        run_id = f"in-{entry_id}"
        try:
            turn = ChannelTurn(key, text, message.text, run_id, context, images)
            result = await self.parts.host.dispatch(turn)
        except GsvError as exc:
            await self._safe_reply(message, error_line(exc.message))
            await self.parts.store.mark(entry_id, DROPPED, self.parts.host.now_ms())
            return {"status": "error", "sessionKey": key, "error": exc.message}
        status = result.get("status")
        if status in ("command", "directive-only", "paused"):  # answered right away
            answer = result.get("error") or result.get("response") or "Command executed"
            await self._safe_reply(message, str(answer))
            await self.parts.store.mark(
                entry_id, ANSWERED, self.parts.host.now_ms(), session_key=key
            )
            return {**result, "sessionKey": key}
        await self.parts.store.mark(
            entry_id, DISPATCHED, self.parts.host.now_ms(), run_id=result["runId"], session_key=key
        )
        self.outbox.start_typing(
            result["runId"], message.channel, message.account_id, message.peer, key
        )
        return {"status": "started", "sessionKey": key, "runId": result["runId"],
                "queued": result.get("queued", False)}  # fmt: skip

    def _authority(self, channel: str, sender_id: str) -> str:
        """owner or guest (gsv_core/authority.py), as the sender is now."""
        return OWNER if is_owner(channel, sender_id, self.parts.settings(channel)) else GUEST

    async def _content(
        self, message: InboundMessage, key: str, authority: str
    ) -> tuple[str, list[dict[str, Any]]]:
        """The enveloped text and stored images of a message."""
        notes: list[str] = []
        images: list[dict[str, Any]] = []
        for media in message.media:
            data = _decoded(media.data)
            size = len(data) if data is not None else media.size
            if data is not None and len(data) > pipeline.MAX_MEDIA_BYTES:
                notes.append(
                    f"[{media.type} attachment too large to keep: {len(data) // 1_048_576} MB]"
                )
                continue
            if media.type == "image" and data is not None:
                images.append(await self.parts.host.store_image(key, data, media.mime_type))
                continue
            if media.type == "audio" and data is not None and not media.transcription:
                text = await self.parts.host.transcribe(data, media.mime_type)
                media = replace(media, transcription=text) if text else media
            notes.append(pipeline.attachment_note(media, size))
        body = "\n".join(part for part in (message.text.strip(), *notes) if part)
        if not body and not images:
            body = "[Empty message]"
        zone = user_zone(self.parts.host.config())
        now = self.parts.host.now_ms()
        return pipeline.envelope(message, body, zone, now, authority), images

    async def _touch(self, message: InboundMessage) -> None:
        record = await self._account(message.channel, message.account_id)
        record.last_message_at = self.parts.host.now_ms()
        await self.parts.store.save_account(record)

    def _prompt_stranger(self, message: InboundMessage) -> None:
        """The pairing prompt, sent beside the queue (a flood of strangers must not hold
        up the owner's messages behind the rate limit), on its own lane, bounded."""
        if len(self._stranger_prompts) >= MAX_STRANGER_PROMPTS:
            log.warning("too many pairing prompts waiting on %s; not answering %s",
                        message.channel, message.peer.id)  # fmt: skip
            return
        task = asyncio.create_task(self._safe_reply(message, AWAITING_APPROVAL, STRANGERS))
        self._stranger_prompts.add(task)
        task.add_done_callback(self._stranger_prompts.discard)

    async def _safe_reply(self, message: InboundMessage, text: str, lane: str = "") -> None:
        """A pipeline answer to the sender (pairing prompt, command output, error line);
        failing to send is logged, never raised."""
        try:
            await self.outbox.send_text(message.channel, message.account_id, message.peer, text,
                                        reply_to=message.message_id, lane=lane)  # fmt: skip
        except Exception:
            log.exception("could not answer %s on %s", message.peer.id, message.channel)

    async def forget_old(self) -> int:
        """Forget closed journal entries past `channels.journalRetentionDays` (open ones
        are kept); how many. Done at start, by the gateway's hourly retention sweep, and
        at most daily as messages arrive."""
        now = self.parts.host.now_ms()
        self._forgotten_at = now
        days = int(setting(self.parts.host.config(), "channels.journalRetentionDays"))
        forgotten = await self.parts.store.prune(now - days * DAY_MS)
        if forgotten:
            log.info("forgot %d inbound messages older than %d days", forgotten, days)
        return forgotten

    async def replay(self) -> None:
        """After a restart, take up every journal entry not yet answered: messages never
        handed to a session are processed; messages whose run was interrupted get a run
        that answers them; a finished run's reply that may not have gone out is sent."""
        await self.forget_old()
        for entry in await self.parts.store.open_entries():
            try:
                await self._replay(entry)
            except Exception:
                log.exception("replaying inbound message %s failed", entry.id)

    async def _replay(self, entry: JournalEntry) -> None:
        message = pipeline.from_wire(entry.payload)
        if entry.state != DISPATCHED or not entry.run_id or not entry.session_key:
            self._queue_for(entry.channel, entry.account_id).put_nowait(_Work(entry.id, message))
            return
        status, final = await self.parts.host.run_status(entry.session_key, entry.run_id)
        sender_id = message.sender.id if message.sender else message.peer.id
        context = {"channel": entry.channel, "accountId": entry.account_id,
                   "peer": message.peer.to_wire(), "inboundMessageId": entry.message_id,
                   "journalId": entry.id, "senderId": sender_id,
                   KEY: self._authority(entry.channel, sender_id)}  # fmt: skip
        if status == "missing":
            self._queue_for(entry.channel, entry.account_id).put_nowait(_Work(entry.id, message))
        elif status == "answered":
            event = {"state": "final", "runId": entry.run_id, "message": final,
                     "channelContext": context}  # fmt: skip
            await self.outbox.deliver_event(events.CHAT, event)
        elif status == "interrupted":
            run_id = await self.parts.host.resume(entry.session_key, entry.run_id, context)
            await self.parts.store.mark(
                entry.id, DISPATCHED, self.parts.host.now_ms(), run_id=run_id
            )
            self.outbox.start_typing(
                run_id, entry.channel, entry.account_id, message.peer, entry.session_key or ""
            )
        else:  # still queued or running: it will answer through its context
            self.outbox.start_typing(
                entry.run_id, entry.channel, entry.account_id, message.peer,
                entry.session_key or "",
            )  # fmt: skip


def _decoded(data: str | None) -> bytes | None:
    if not data:
        return None
    import base64
    import binascii

    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
