"""`tool.approve` and `tool.approvals` params (gsv additions; `remember: "always"` adds a
rule)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gsv_core.protocol.schemas import WireModel


class ToolApproveParams(WireModel):
    approvalId: str = Field(min_length=1, max_length=64)
    decision: Literal["allow", "deny"]
    # "session": this exact call again in this session; "always": add the approval's
    # `alwaysAllow` rules to toolApproval.allow (allow only)
    remember: Literal["session", "always"] | None = None


class ToolApprovalsParams(WireModel):
    """No params: every pending approval, its long strings as excerpts. `approvalId`: that
    one only; with `full`, its whole call (the prompt shows excerpts of a huge one)."""

    approvalId: str | None = Field(default=None, min_length=1, max_length=64)
    full: bool = False
