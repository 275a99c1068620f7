"""Node methods (docs/protocol.md#methods): tool calls, log fetches, probes,
background exec events, the node inventory and `node.forget`.

`tool.request` runs a node tool on behalf of a session: the call is checked and sent at
once (`{status: "sent"}`), and its outcome is reported to the session's clients as a
`chat.tool` event with the caller's callId (it never enters the session's history, which
only holds calls the model made).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING
from typing import Any

from gsv_core.approval.binding import FULL
from gsv_core.errors import GsvError
from gsv_core.gateway.handlers.routes import Routes
from gsv_core.mcp.names import is_mcp_name
from gsv_core.protocol import events
from gsv_core.protocol import methods as m
from gsv_core.protocol.schemas.nodes import AckResult
from gsv_core.protocol.schemas.nodes import LogsGetParams
from gsv_core.protocol.schemas.nodes import LogsGetResult
from gsv_core.protocol.schemas.nodes import LogsResultParams
from gsv_core.protocol.schemas.nodes import NodeExecEventParams
from gsv_core.protocol.schemas.nodes import NodeForgetParams
from gsv_core.protocol.schemas.nodes import NodeForgetResult
from gsv_core.protocol.schemas.nodes import NodeProbeResultParams
from gsv_core.protocol.schemas.nodes import NodesListResult
from gsv_core.protocol.schemas.nodes import ToolInvokeParams
from gsv_core.protocol.schemas.nodes import ToolRequestParams
from gsv_core.protocol.schemas.nodes import ToolResultParams
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway

log = logging.getLogger(__name__)


def _ack(dropped: bool) -> AckResult:
    """`{ok: true, dropped: true}` for an answer nobody waits for any more."""
    return AckResult(dropped=True) if dropped else AckResult()


def register(router: Router, gateway: Gateway) -> None:
    route = Routes(router)
    nodes = gateway.nodes

    @route(m.TOOL_INVOKE, ToolInvokeParams)
    async def tool_invoke(ctx: RequestContext, params: ToolInvokeParams) -> dict[str, Any]:
        # a client is the owner calling the tool by hand: that is the approval
        if is_mcp_name(params.tool):  # an MCP server's tool, under its own timeoutMs
            return {"result": await gateway.mcp.call(params.tool, params.args)}
        timeout = gateway.tool_timeout()
        return {"result": await nodes.invoke(params.tool, params.args, timeout, access=FULL)}

    @route(m.TOOL_REQUEST, ToolRequestParams)
    async def tool_request(ctx: RequestContext, params: ToolRequestParams) -> dict[str, str]:
        key = gateway.sessions.canonical(params.sessionKey)
        nodes.resolve_tool(params.tool)  # 404 now, not later, for an unknown tool
        gateway.spawn(_requested_call(gateway, key, params))
        return {"status": "sent"}

    @route(m.TOOL_RESULT, ToolResultParams)
    async def tool_result(ctx: RequestContext, params: ToolResultParams) -> AckResult:
        dropped = nodes.deliver_tool_result(ctx.peer, params.callId, params.result, params.error)
        return _ack(dropped)

    @route(m.LOGS_GET, LogsGetParams)
    async def logs_get(ctx: RequestContext, params: LogsGetParams) -> LogsGetResult:
        return await nodes.fetch_logs(params.nodeId, params.lines, gateway.tool_timeout())

    @route(m.LOGS_RESULT, LogsResultParams)
    async def logs_result(ctx: RequestContext, params: LogsResultParams) -> AckResult:
        return _ack(nodes.deliver_logs(ctx.peer, params))

    @route(m.NODE_PROBE_RESULT, NodeProbeResultParams)
    async def probe_result(ctx: RequestContext, params: NodeProbeResultParams) -> AckResult:
        return _ack(nodes.deliver_probe(ctx.peer, params))

    @route(m.NODE_EXEC_EVENT, NodeExecEventParams)
    async def exec_event(ctx: RequestContext, params: NodeExecEventParams) -> AckResult:
        node_id = ctx.peer.peer_id or ""
        return _ack(await gateway.exec_events.deliver(node_id, params))

    @route(m.NODE_FORGET, NodeForgetParams)
    async def node_forget(ctx: RequestContext, params: NodeForgetParams) -> NodeForgetResult:
        return await nodes.forget(params.nodeId.strip(), params.force)

    @route(m.NODES_LIST)
    async def nodes_list(ctx: RequestContext, params: object) -> NodesListResult:
        inventory = nodes.inventory()
        return NodesListResult(nodes=inventory, count=len(inventory))

    gateway.events.update(
        {events.TOOL_INVOKE, events.TOOL_CANCEL, events.LOGS_GET, events.NODE_PROBE}
    )


async def _requested_call(gateway: Gateway, key: str, params: ToolRequestParams) -> None:
    """Run a `tool.request` call and tell the session's clients how it went."""
    base: dict[str, Any] = {"callId": params.callId, "name": params.tool}

    def tell(phase: str, **fields: Any) -> None:
        tool = {**base, "phase": phase, **fields}
        gateway.sessions.host.emit(
            events.CHAT_TOOL, {"runId": None, "sessionKey": key, "tool": tool}
        )

    tell("start", args=params.args)
    started = time.monotonic()
    try:
        # a client's own request, as tool.invoke: the owner's hand, full access
        result = await gateway.nodes.invoke(
            params.tool, params.args, gateway.tool_timeout(), access=FULL
        )
    except GsvError as exc:
        tell("end", isError=True, summary=exc.message, durationMs=_ms_since(started))
        return
    tell("end", isError=False, result=result, durationMs=_ms_since(started))


def _ms_since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
