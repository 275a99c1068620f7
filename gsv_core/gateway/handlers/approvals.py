"""`tool.approve` and `tool.approvals` (gsv additions): answering and listing
the tool calls that wait for a human. Only clients may call them (the mode table), which
is what "only the owner approves" means on the wire."""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from gsv_core.errors import InvalidParams
from gsv_core.gateway.approval_answers import answer
from gsv_core.gateway.handlers.routes import Routes
from gsv_core.protocol import events
from gsv_core.protocol import methods as m
from gsv_core.protocol.schemas.approvals import ToolApprovalsParams
from gsv_core.protocol.schemas.approvals import ToolApproveParams
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway


def register(router: Router, gateway: Gateway) -> None:
    route = Routes(router)

    @route(m.TOOL_APPROVE, ToolApproveParams)
    async def tool_approve(ctx: RequestContext, params: ToolApproveParams) -> dict[str, Any]:
        approval, added = await answer(gateway, params.approvalId, params.decision, params.remember)
        return {"ok": True, "approvalId": approval.id, "decision": params.decision,
                "tool": approval.tool, "sessionKey": approval.session_key,
                "rulesAdded": list(added)}  # fmt: skip

    @route(m.TOOL_APPROVALS, ToolApprovalsParams)
    async def tool_approvals(ctx: RequestContext, params: ToolApprovalsParams) -> dict[str, Any]:
        if params.approvalId is None:
            if params.full:
                raise InvalidParams("full needs approvalId: one whole call at a time")
            return {"approvals": [a.to_wire() for a in gateway.approvals.pending()]}
        approval = gateway.approvals.get(params.approvalId)  # 404 when not pending
        return {"approvals": [approval.to_wire(full=params.full)]}

    gateway.events.add(events.TOOL_APPROVAL)
