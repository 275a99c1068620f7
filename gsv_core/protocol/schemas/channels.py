"""Channel and pairing params (docs/protocol.md#methods)."""

from __future__ import annotations

from typing import Any
from typing import Literal

from pydantic import Field

from gsv_core.protocol.schemas import WireModel

NAME = r"^[a-z][a-z0-9_-]{0,31}$"


class ChannelParams(WireModel):
    channel: str = Field(pattern=NAME)
    accountId: str = Field(default="default", min_length=1, max_length=128)


class ChannelStartParams(ChannelParams):
    config: dict[str, Any] = Field(default_factory=dict)


class ChannelStatusParams(WireModel):
    channel: str = Field(pattern=NAME)
    accountId: str | None = Field(default=None, min_length=1, max_length=128)


class ChannelLoginParams(ChannelParams):
    force: bool = False


class PeerInfo(WireModel):
    kind: Literal["dm", "group", "channel", "thread"]
    id: str = Field(min_length=1, max_length=256)
    name: str | None = None
    handle: str | None = None
    threadId: str | None = None


class SenderInfo(WireModel):
    id: str = Field(min_length=1, max_length=256)
    name: str | None = None
    handle: str | None = None


class MediaAttachment(WireModel):
    type: Literal["image", "audio", "video", "document"]
    mimeType: str = "application/octet-stream"
    data: str | None = None
    url: str | None = None
    filename: str | None = None
    size: int | None = Field(default=None, ge=0)
    duration: float | None = None
    transcription: str | None = None


class InboundBody(WireModel):
    id: str = Field(min_length=1, max_length=256)
    text: str = Field(default="", max_length=100_000)
    timestamp: int | None = None
    replyToId: str | None = None
    replyToText: str | None = None
    media: list[MediaAttachment] = Field(default_factory=list)
    location: dict[str, Any] | None = None


class ChannelInboundParams(WireModel):
    channel: str = Field(pattern=NAME)
    accountId: str = Field(min_length=1, max_length=128)
    peer: PeerInfo
    sender: SenderInfo | None = None
    message: InboundBody
    wasMentioned: bool = False
    mentionedIds: list[str] = Field(default_factory=list)
    replyToBot: bool = False


class PairParams(WireModel):
    channel: str = Field(pattern=NAME)
    senderId: str = Field(min_length=1, max_length=256)


class PairApproveParams(PairParams):
    # gsv addition: also one of the channel's owners (`channels.<name>.owners`): the
    # owner's reach, not a guest's (docs/security.md)
    owner: bool = False
