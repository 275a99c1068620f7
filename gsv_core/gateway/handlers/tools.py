"""`tools.list`: the tools the agent can call: node tools named `{nodeId}__{tool}` (spec 3)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gsv_core.protocol.methods import TOOLS_LIST
from gsv_core.protocol.schemas.tools import ToolsListResult
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router

if TYPE_CHECKING:
    from gsv_core.gateway.app import Gateway


def register(router: Router, gateway: Gateway) -> None:
    async def tools_list(ctx: RequestContext, params: Any) -> ToolsListResult:
        return ToolsListResult(tools=gateway.nodes.tool_definitions())

    router.add(TOOLS_LIST, tools_list)
