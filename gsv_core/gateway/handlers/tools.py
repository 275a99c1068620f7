"""`tools.list`: the tools the agent can call: native `gsv__*` tools first, then node tools
named `{nodeId}__{tool}`, nodes sorted by id, then MCP tools `mcp_<server>__<tool>`.

The node tools are the bulk at a crowd of nodes (a thousand nodes: 7,000 tools, megabytes):
each node's part is encoded once per connection and the whole once per change of who is
online (`NodeService.tools_json`), not validated, dumped and encoded again on every call.
The answer has the shape of `ToolsListResult`, byte for byte what encoding it would give."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gsv_core.protocol.frames import EncodedJson, encode_json
from gsv_core.protocol.methods import TOOLS_LIST
from gsv_core.protocol.schemas.connect import ToolDefinition
from gsv_core.providers.base import ToolSpec
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway


def register(router: Router, gateway: Gateway) -> None:
    async def tools_list(ctx: RequestContext, params: Any) -> EncodedJson:
        native = _items(gateway.native_tools.specs())
        mcp = _items(gateway.mcp.specs())
        parts = (part for part in (native, gateway.nodes.tools_json(), mcp) if part)
        return EncodedJson(f'{{"tools":[{",".join(parts)}]}}')

    router.add(TOOLS_LIST, tools_list)


def _items(specs: list[ToolSpec]) -> str:
    """The specs as encoded `tools.list` items, comma-joined ("" for none)."""
    definitions = [
        ToolDefinition(name=t.name, description=t.description, inputSchema=t.parameters).to_wire()
        for t in specs
    ]
    return encode_json(definitions)[1:-1]
