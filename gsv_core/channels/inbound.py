"""The pure parts of the inbound pipeline: the wire form of an inbound
message, mention gating for groups (mentions and replies only), the envelope the agent reads (in the
user's timezone) and how attachments become text."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from gsv_core.authority import GUEST
from gsv_core.channels.base import InboundMessage
from gsv_core.channels.base import Media
from gsv_core.channels.base import Peer
from gsv_core.channels.base import Sender

MAX_MEDIA_BYTES = 25 * 1024 * 1024


def to_wire(message: InboundMessage) -> dict[str, Any]:
    """`channel.inbound` params (docs/protocol.md#methods), plus `replyToBot`."""
    body: dict[str, Any] = {"id": message.message_id, "text": message.text}
    optional = {
        "timestamp": message.timestamp,
        "replyToId": message.reply_to_id,
        "replyToText": message.reply_to_text,
        "location": message.location,
    }
    body.update({k: v for k, v in optional.items() if v is not None})
    if message.media:
        body["media"] = [_media_wire(m) for m in message.media]
    wire: dict[str, Any] = {
        "channel": message.channel,
        "accountId": message.account_id,
        "peer": message.peer.to_wire(),
        "message": body,
        "wasMentioned": message.was_mentioned,
        "replyToBot": message.reply_to_bot,
    }
    if message.sender is not None:
        wire["sender"] = {k: v for k, v in vars(message.sender).items() if v is not None}
    if message.mentioned_ids:
        wire["mentionedIds"] = list(message.mentioned_ids)
    return wire


def _media_wire(media: Media) -> dict[str, Any]:
    names = {"mime_type": "mimeType"}
    return {names.get(k, k): v for k, v in vars(media).items() if v is not None}


def from_wire(data: dict[str, Any]) -> InboundMessage:
    body = data["message"]
    sender = data.get("sender")
    media = tuple(
        Media(
            type=m.get("type", "document"),
            mime_type=m.get("mimeType", "application/octet-stream"),
            data=m.get("data"),
            url=m.get("url"),
            filename=m.get("filename"),
            size=m.get("size"),
            duration=m.get("duration"),
            transcription=m.get("transcription"),
        )
        for m in body.get("media") or []
    )
    return InboundMessage(
        channel=data["channel"],
        account_id=data["accountId"],
        peer=Peer.from_wire(data["peer"]),
        message_id=str(body["id"]),
        text=body.get("text") or "",
        sender=Sender(str(sender["id"]), sender.get("name"), sender.get("handle"))
        if sender
        else None,
        timestamp=body.get("timestamp"),
        reply_to_id=body.get("replyToId"),
        reply_to_text=body.get("replyToText"),
        reply_to_bot=bool(data.get("replyToBot")),
        media=media,
        was_mentioned=bool(data.get("wasMentioned")),
        mentioned_ids=tuple(data.get("mentionedIds") or ()),
        location=body.get("location"),
    )


def wakes_agent(message: InboundMessage, require_mention: bool) -> bool:
    """DMs always; group messages only when the bot is mentioned or replied to (unless
    the channel's `groups.requireMention` is false)."""
    if message.peer.kind == "dm" or not require_mention:
        return True
    return message.was_mentioned or message.reply_to_bot


def sender_label(message: InboundMessage) -> str:
    if message.sender is not None:
        return message.sender.name or message.sender.handle or message.sender.id
    return message.peer.name or message.peer.id


# a display name is the sender's own text: nothing in it may pass for the envelope's
# brackets, its authority mark or a line of its own
_ENVELOPE_MARKS = re.compile(r"[\[\]()\r\n\u2028\u2029]+")
LABEL_CHARS = 64


def _plain(label: str) -> str:
    return " ".join(_ENVELOPE_MARKS.sub(" ", label).split())[:LABEL_CHARS] or "?"


def envelope(
    message: InboundMessage, text: str, tz: dt.tzinfo, now_ms: int, authority: str = GUEST
) -> str:
    """`[telegram · 3:04 PM UTC · Ann (guest)] text`: the sender, in direct messages too,
    and whether they are one of the owners or a guest (gsv_core/authority.py), so the
    model can tell the owner's words from anyone else's in a shared session."""
    moment = dt.datetime.fromtimestamp((message.timestamp or now_ms) / 1000, tz)
    clock = moment.strftime("%I:%M %p").lstrip("0")
    parts = [message.channel, f"{clock} {moment.tzname() or ''}".strip()]
    parts.append(f"{_plain(sender_label(message))} ({authority})")
    lines = [f"[{' · '.join(parts)}] {text}".rstrip()]
    if message.reply_to_text:
        quoted = " ".join(message.reply_to_text.split())[:300]
        lines.append(f'(replying to: "{quoted}")')
    if message.location:
        where = message.location
        place = f" {where['name']}" if where.get("name") else ""
        lines.append(f"[Location: {where.get('lat')}, {where.get('lon')}{place}]")
    return "\n".join(lines)


def attachment_note(media: Media, size: int | None) -> str:
    """What the agent reads for an attachment it cannot see."""
    name = media.filename or media.type
    kilobytes = f" ({(size or 0) // 1024}KB)" if size else ""
    if media.type == "audio":
        if media.transcription:
            return f"[Voice message transcription: {media.transcription}]"
        return "[Voice message received - transcription unavailable]"
    if media.type == "video":
        return f"[Video attached: {name}{kilobytes}, type: {media.mime_type}]"
    return f"[Document attached: {name}{kilobytes}, type: {media.mime_type}]"
