"""`chat.send` params (docs/protocol.md#methods)."""

from __future__ import annotations

from pydantic import Field

from gsv_core.protocol.schemas import WireModel


class ChatSendParams(WireModel):
    sessionKey: str = Field(min_length=1)
    message: str = Field(min_length=1)
    runId: str | None = Field(default=None, min_length=1, max_length=128)
