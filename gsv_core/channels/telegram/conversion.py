"""Telegram's objects as gsv's: the peer and sender of a message, mentions of the bot,
replies, attachments (downloaded into inline base64 Media under the Bot API's 20 MB limit),
and the ids of chats and threads. Pure but for `download`."""

from __future__ import annotations

import base64
import logging
import re
from dataclasses import dataclass
from dataclasses import replace
from typing import TYPE_CHECKING
from typing import Any

from gsv_core.channels.base import Media
from gsv_core.channels.base import Peer
from gsv_core.channels.base import Sender
from gsv_core.channels.media import media_kind
from gsv_core.channels.media import too_big_note
from gsv_core.channels.telegram.account import masked_reason
from gsv_core.channels.telegram.account import seconds

if TYPE_CHECKING:
    from telegram import Bot
    from telegram import Message

log = logging.getLogger(__name__)

MAX_MEDIA_BYTES = 20 * 1024 * 1024  # the Bot API's own download limit
_PEER_KINDS = {"private": "dm", "group": "group", "supergroup": "group", "channel": "channel"}
_MENTION_TYPES: list[str | None] = ["mention", "text_mention"]


@dataclass(frozen=True)
class Attachment:
    """A file a message announced: its Telegram file id, and the Media it becomes once
    downloaded (without data until then; `size` as announced)."""

    file_id: str
    media: Media


def peer_of(message: Message) -> Peer:
    chat = message.chat
    thread = message.message_thread_id if message.is_topic_message else None
    return Peer(
        kind=_PEER_KINDS.get(chat.type, "group"),
        id=str(chat.id),
        name=chat.effective_name,
        handle=chat.username,
        thread_id=str(thread) if thread else None,
    )


def chat_peer_of(message: Any) -> Peer:
    """The peer of a message Telegram no longer shows the bot (only its chat is known)."""
    chat = message.chat
    return Peer(_PEER_KINDS.get(chat.type, "group"), str(chat.id), chat.effective_name,
                chat.username)  # fmt: skip


def sender_of(message: Message) -> Sender | None:
    # anonymous admins and channel posts speak as a chat; prefer it over the stand-in user
    if message.sender_chat is not None:
        chat = message.sender_chat
        return Sender(str(chat.id), chat.effective_name, chat.username)
    if message.from_user is not None:
        user = message.from_user
        return Sender(str(user.id), user.full_name, user.username)
    return None


def find_mentions(message: Message, bot_id: int, username: str) -> tuple[bool, tuple[str, ...]]:
    """Whether the bot is mentioned, and the ids of the users mentioned."""
    handle = f"@{username}".lower()
    found = {
        **message.parse_entities(_MENTION_TYPES),
        **message.parse_caption_entities(_MENTION_TYPES),
    }
    ids: list[str] = []
    for entity, value in found.items():
        if entity.type == "text_mention" and entity.user is not None:
            ids.append(str(entity.user.id))
        elif username and value.lower() == handle:
            ids.append(str(bot_id))
    text = message.text or message.caption or ""
    if username and str(bot_id) not in ids and _handle_pattern(username).search(text):
        ids.append(str(bot_id))  # a mention the client did not mark as an entity
    return str(bot_id) in ids, tuple(dict.fromkeys(ids))


def _handle_pattern(username: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w@])@{re.escape(username)}(?!\w)", re.IGNORECASE)


def strip_command_suffix(text: str, username: str) -> tuple[str, bool]:
    """`/status@mybot args` -> (`/status args`, True): Telegram's way of addressing a
    command to one bot in a group."""
    if not username:
        return text, False
    match = re.match(rf"(/\w+)@{re.escape(username)}(?!\w)", text, re.IGNORECASE)
    if match is None:
        return text, False
    return match.group(1) + text[match.end() :], True


def real_reply(message: Message) -> Message | None:
    reply = message.reply_to_message
    if reply is None:
        return None
    # in a forum topic every message "replies" to the topic's opening service message
    if reply.forum_topic_created is not None or (
        message.is_topic_message and reply.message_id == message.message_thread_id
    ):
        return None
    return reply


def attachments_of(message: Message) -> list[Attachment]:
    found: list[Attachment] = []
    if message.photo:
        best = max(message.photo, key=lambda p: (p.width * p.height, p.file_size or 0))
        image = Media(type="image", mime_type="image/jpeg", size=best.file_size)
        found.append(Attachment(best.file_id, image))
    for kind, media, default_mime in (
        ("audio", message.voice, "audio/ogg"),
        ("audio", message.audio, "audio/mpeg"),
        ("video", message.video, "video/mp4"),
    ):
        if media is not None:
            announced = Media(
                type=kind,
                mime_type=media.mime_type or default_mime,
                filename=getattr(media, "file_name", None),
                size=media.file_size,
                duration=seconds(media.duration),
            )
            found.append(Attachment(media.file_id, announced))
    document = message.document
    if document is not None and message.animation is None:
        mime = document.mime_type or "application/octet-stream"
        announced = Media(
            type=media_kind(mime),
            mime_type=mime,
            filename=document.file_name,
            size=document.file_size,
        )
        found.append(Attachment(document.file_id, announced))
    return found


async def download(bot: Bot, attachment: Attachment) -> Media | str:
    """The attachment as inline base64 Media, or a note for the text saying why not."""
    from telegram import error as tg

    announced = attachment.media
    label = announced.filename or announced.type
    if announced.size is not None and announced.size > MAX_MEDIA_BYTES:
        return too_big_note(label, announced.size, MAX_MEDIA_BYTES)
    try:
        file = await bot.get_file(attachment.file_id)
        if file.file_size is not None and file.file_size > MAX_MEDIA_BYTES:
            return too_big_note(label, file.file_size, MAX_MEDIA_BYTES)
        data = bytes(await file.download_as_bytearray())
    except tg.TelegramError as exc:
        log.warning("telegram attachment %s not downloaded: %s", label, masked_reason(exc))
        return f"[attachment not downloaded: {label}]"
    if len(data) > MAX_MEDIA_BYTES:
        return too_big_note(label, len(data), MAX_MEDIA_BYTES)
    return replace(announced, data=base64.b64encode(data).decode("ascii"), size=len(data))


def parse_chat_id(peer_id: str) -> int | str:
    return int(peer_id) if re.fullmatch(r"-?\d+", peer_id) else peer_id  # or "@channelname"


def parse_int(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() else None
