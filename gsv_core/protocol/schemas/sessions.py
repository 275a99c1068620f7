"""Session method params (docs/protocol.md#methods): keys, pagination, patches."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gsv_core.protocol.schemas import WireModel

THINKING = Literal["none", "minimal", "low", "medium", "high", "xhigh"]


class SessionKeyParams(WireModel):
    sessionKey: str = Field(min_length=1)


class SessionsListParams(WireModel):
    offset: int = Field(default=0, ge=0)
    limit: int = Field(default=100, ge=1, le=500)


class SessionPreviewParams(SessionKeyParams):
    limit: int | None = Field(default=None, ge=1, le=10_000)


class SessionCompactParams(SessionKeyParams):
    keepMessages: int = Field(default=20, ge=1, le=100_000)


class ModelSetting(WireModel):
    provider: str | None = Field(default=None, min_length=1, max_length=64)
    id: str | None = Field(default=None, min_length=1, max_length=200)


class ModelRef(WireModel):
    provider: str = Field(min_length=1, max_length=64)
    id: str = Field(min_length=1, max_length=200)


class SettingsPatch(WireModel):
    model: ModelSetting | None = None
    # replaces the session's whole list; [] means no fallbacks (docs/models.md#fallbacks)
    fallbacks: list[ModelRef] | None = Field(default=None, max_length=8)
    thinkingLevel: THINKING | None = None
    systemPrompt: str | None = Field(default=None, max_length=100_000)
    maxTokens: int | None = Field(default=None, ge=1, le=1_000_000)


class ResetPolicyPatch(WireModel):
    mode: Literal["manual", "daily", "idle"] | None = None
    atHour: int | None = Field(default=None, ge=0, le=23)
    idleMinutes: int | None = Field(default=None, ge=0, le=525_600)


class SessionPatchParams(SessionKeyParams):
    settings: SettingsPatch | None = None
    label: str | None = Field(default=None, max_length=200)
    resetPolicy: ResetPolicyPatch | None = None
