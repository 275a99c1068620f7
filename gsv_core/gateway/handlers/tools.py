"""`tools.list`: the tools the agent can call: native `gsv__*` tools first, then node tools
named `{nodeId}__{tool}`, nodes sorted by id, then MCP tools `mcp_<server>__<tool>`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gsv_core.protocol.methods import TOOLS_LIST
from gsv_core.protocol.schemas.connect import ToolDefinition
from gsv_core.protocol.schemas.tools import ToolsListResult
from gsv_core.providers.base import ToolSpec
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway


def register(router: Router, gateway: Gateway) -> None:
    async def tools_list(ctx: RequestContext, params: Any) -> ToolsListResult:
        native = _definitions(gateway.native_tools.specs())
        mcp = _definitions(gateway.mcp.specs())
        return ToolsListResult(tools=[*native, *gateway.nodes.tool_definitions(), *mcp])

    router.add(TOOLS_LIST, tools_list)


def _definitions(specs: list[ToolSpec]) -> list[ToolDefinition]:
    return [
        ToolDefinition(name=t.name, description=t.description, inputSchema=t.parameters)
        for t in specs
    ]
