"""`tools.list`: the tools the agent can call: native `gsv__*` tools first, then node tools
named `{nodeId}__{tool}`, nodes sorted by id, then MCP tools `mcp_<server>__<tool>`.

The node tools are the bulk at a crowd of nodes (a thousand nodes: 7,000 tools, megabytes).
The answer is kept encoded: each node's tools are encoded once per connection and joined
once per change of who is online (`NodeService.tools_json`); native and MCP tools are
encoded again only when their specs change; the whole answer is built again only when a
part changed. A call then costs the frame around it, not validating, dumping and encoding
megabytes. The answer has the shape of `ToolsListResult`, byte for byte what encoding
it whole would give."""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from gsv_core.protocol.frames import EncodedJson
from gsv_core.protocol.frames import encode_json
from gsv_core.protocol.methods import TOOLS_LIST
from gsv_core.protocol.schemas.connect import ToolDefinition
from gsv_core.providers.base import ToolSpec
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway


def register(router: Router, gateway: Gateway) -> None:
    native, mcp = _EncodedSpecs(), _EncodedSpecs()
    kept: list[Any] = [None, EncodedJson("")]  # [(the parts it was built of), answer]

    async def tools_list(ctx: RequestContext, params: Any) -> EncodedJson:
        parts = (
            native.items(gateway.native_tools.specs()),
            gateway.nodes.tools_json(),
            mcp.items(gateway.mcp.specs()),
        )
        if kept[0] is None or any(a is not b for a, b in zip(parts, kept[0], strict=True)):
            joined = ",".join(part for part in parts if part)
            kept[:] = [parts, EncodedJson(f'{{"tools":[{joined}]}}')]
        answer: EncodedJson = kept[1]
        return answer

    router.add(TOOLS_LIST, tools_list)


class _EncodedSpecs:
    """Specs as encoded `tools.list` items, comma-joined ("" for none), encoded again only
    when a spec changed (its name, description or schema object)."""

    def __init__(self) -> None:
        self._key: tuple[tuple[str, str, int], ...] | None = None
        self._specs: list[ToolSpec] = []  # kept alive: the key's ids stay theirs
        self._text = ""

    def items(self, specs: list[ToolSpec]) -> str:
        key = tuple((t.name, t.description, id(t.parameters)) for t in specs)
        if key != self._key:
            definitions = [
                ToolDefinition(
                    name=t.name, description=t.description, inputSchema=t.parameters
                ).to_wire()
                for t in specs
            ]
            self._key, self._specs, self._text = key, specs, encode_json(definitions)[1:-1]
        return self._text
