"""`chat.send` and `chat.subscribe` params (docs/protocol.md#methods)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gsv_core.protocol.schemas import WireModel

MAX_IMAGES = 4
MAX_IMAGE_BYTES = 5 * 1024 * 1024
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


class MediaParam(WireModel):
    """An image sent with the message (gsv addition; the web chat's attachments)."""

    type: Literal["image"]
    mimeType: Literal["image/png", "image/jpeg", "image/gif", "image/webp"]
    # base64 of at most MAX_IMAGE_BYTES (4 characters per 3 bytes)
    data: str = Field(min_length=4, max_length=(MAX_IMAGE_BYTES + 2) // 3 * 4)


class ChatSendParams(WireModel):
    sessionKey: str = Field(min_length=1)
    message: str = Field(min_length=1)
    runId: str | None = Field(default=None, min_length=1, max_length=128)
    media: list[MediaParam] | None = Field(default=None, min_length=1, max_length=MAX_IMAGES)


MAX_WATCHED = 64  # sessions one connection may follow by name


class ChatSubscribeParams(WireModel):
    """Which sessions' conversation events this connection wants (gsv addition).
    `None` (null) is every session, what a client that never asks gets."""

    # required: a client says "every session" with null, not by leaving it out
    sessionKeys: list[str] | None = Field(max_length=MAX_WATCHED)
