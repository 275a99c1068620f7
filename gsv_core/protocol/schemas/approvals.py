"""`tool.approve` params (gsv addition, issue 13)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gsv_core.protocol.schemas import WireModel


class ToolApproveParams(WireModel):
    approvalId: str = Field(min_length=1, max_length=64)
    decision: Literal["allow", "deny"]
    remember: Literal["session"] | None = None
