"""`chat.send` (docs/protocol.md#methods): the message goes through the chat pipeline, which
stores it before this answers. A queued message says so (`queued: true` and
`queuePosition`); a message that started a run leaves both out, as the original did.
While the session waits for a tool approval the queued message's answer is also
`status: "paused"` with the original's reminder. Images (`media`, a gsv addition) are
checked (base64, size, and that the bytes are the image type they claim) and stored in
the session's media before the message is."""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Any

from gsv_core.errors import InvalidParams
from gsv_core.gateway.chat_pipeline import approval_reminder, process_message
from gsv_core.gateway.handlers.routes import Routes
from gsv_core.protocol import events
from gsv_core.protocol import methods as m
from gsv_core.protocol.messages import ImageBlock
from gsv_core.protocol.schemas.chat import MAX_IMAGE_BYTES, ChatSendParams, MediaParam
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway

# the first bytes of each accepted image type (RIFF....WEBP: bytes 8-12 say WebP)
_MAGIC = {"image/png": b"\x89PNG\r\n\x1a\n", "image/jpeg": b"\xff\xd8\xff",
          "image/gif": b"GIF8", "image/webp": b"RIFF"}  # fmt: skip


def _decode_media(media: list[MediaParam]) -> list[tuple[bytes, str]]:
    decoded: list[tuple[bytes, str]] = []
    for index, item in enumerate(media):
        where = f"media[{index}]"
        try:
            data = base64.b64decode(item.data, validate=True)
        except binascii.Error:
            raise InvalidParams(f"{where}.data is not base64") from None
        if len(data) > MAX_IMAGE_BYTES:
            raise InvalidParams(f"{where} is larger than {MAX_IMAGE_BYTES // 2**20} MiB")
        webp = item.mimeType != "image/webp" or data[8:12] == b"WEBP"
        if not data.startswith(_MAGIC[item.mimeType]) or not webp:
            raise InvalidParams(f"{where}.data is not a {item.mimeType} image")
        decoded.append((data, item.mimeType))
    return decoded


async def _store_images(
    gateway: Gateway, key: str, images: list[tuple[bytes, str]]
) -> list[ImageBlock]:
    media = gateway.sessions.host.media
    return [
        {"type": "image", "mimeType": mime, "mediaPath": await media.save(key, data, mime)}
        for data, mime in images
    ]


def register(router: Router, gateway: Gateway) -> None:
    route = Routes(router)

    @route(m.CHAT_SEND, ChatSendParams)
    async def chat_send(ctx: RequestContext, params: ChatSendParams) -> dict[str, Any]:
        key = gateway.sessions.canonical(params.sessionKey)
        images = await _store_images(gateway, key, _decode_media(params.media or []))
        result = await process_message(
            gateway, key, params.message, params.runId, images=images or None
        )
        return approval_reminder(gateway, key, result)

    gateway.events.update({events.CHAT, events.CHAT_TOOL, events.SESSION_NOTICE})
