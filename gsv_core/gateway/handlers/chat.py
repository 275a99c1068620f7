"""`chat.send` (docs/protocol.md#methods): the message goes through the chat pipeline, which
stores it before this answers. A queued message says so (`queued: true` and
`queuePosition`); a message that started a run leaves both out, as the original did.
While the session waits for a tool approval the queued message's answer is also
`status: "paused"` with the original's reminder. Images (`media`, a gsv addition) are
checked (base64, size, and that the bytes are the image type they claim) and stored in
the session's media before the message is.

`chat.subscribe` (a gsv addition; the original had no subscriptions) narrows the
conversation events a connection hears to the sessions it names; a client that never
calls it hears every session, as a client of the original expects."""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING
from typing import Any

from gsv_core.errors import InvalidParams
from gsv_core.gateway.chat_pipeline import approval_reminder
from gsv_core.gateway.chat_pipeline import process_message
from gsv_core.gateway.handlers.routes import Routes
from gsv_core.protocol import events
from gsv_core.protocol import methods as m
from gsv_core.protocol.schemas.chat import MAX_IMAGE_BYTES
from gsv_core.protocol.schemas.chat import ChatSendParams
from gsv_core.protocol.schemas.chat import ChatSubscribeParams
from gsv_core.protocol.schemas.chat import MediaParam
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router
from gsv_core.sniff import HEAD_BYTES
from gsv_core.sniff import sniff_mime

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway


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
        if sniff_mime(data[:HEAD_BYTES]) != item.mimeType:
            raise InvalidParams(f"{where}.data is not a {item.mimeType} image")
        decoded.append((data, item.mimeType))
    return decoded


def register(router: Router, gateway: Gateway) -> None:
    route = Routes(router)

    @route(m.CHAT_SEND, ChatSendParams)
    async def chat_send(ctx: RequestContext, params: ChatSendParams) -> dict[str, Any]:
        key = gateway.sessions.canonical(params.sessionKey)
        media = gateway.sessions.host.media
        images = [
            await media.save_image(key, *image) for image in _decode_media(params.media or [])
        ]
        result = await process_message(
            gateway, key, params.message, params.runId, images=images or None
        )
        return approval_reminder(gateway, key, result)

    @route(m.CHAT_SUBSCRIBE, ChatSubscribeParams)
    async def chat_subscribe(ctx: RequestContext, params: ChatSubscribeParams) -> dict[str, Any]:
        """Follow only these sessions' conversation events (null: all of them again).
        Keys are canonicalised as `chat.send` does, so `main` follows what it sends to."""
        keys = params.sessionKeys
        watching = None if keys is None else frozenset(map(gateway.sessions.canonical, keys))
        ctx.peer.watching = watching
        return {"sessionKeys": None if watching is None else sorted(watching)}

    gateway.events.update(events.CONVERSATION_EVENTS)
