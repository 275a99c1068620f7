"""Answering a pending approval, from whichever door the answer comes in (`tool.approve`,
a "yes" / "always" / "no" reply): "always" first stores the approval's rules in
`toolApproval.allow` (so `gsv approvals rules` lists them), then lets the call run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gsv_core.approval import always
from gsv_core.approval.service import PendingApproval
from gsv_core.errors import InvalidParams

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway

ALLOW_PATH = "toolApproval.allow"


async def answer(
    gateway: Gateway, approval_id: str, decision: str, remember: str | None = None
) -> tuple[PendingApproval, tuple[str, ...]]:
    """Settle the approval; returns it and the rules added (for "always")."""
    added: tuple[str, ...] = ()
    if decision == "allow" and remember == "always":
        rules = gateway.approvals.get(approval_id).decision.always
        if not rules:
            raise InvalidParams(
                "no rule can cover this call (it is not a program with its subcommand, or "
                "the line is not read with confidence): allow it once instead"
            )
        await gateway.config.update(ALLOW_PATH, lambda current: always.add_rules(current, rules))
        added, remember = rules, None
    return gateway.approvals.resolve(approval_id, decision, remember), added
