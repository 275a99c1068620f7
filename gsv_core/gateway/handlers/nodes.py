"""Node methods (seed 001 "Tools", "Node", "Logs"): tool calls, log fetches, probes,
background exec events, the node inventory and `node.forget`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gsv_core.protocol import events
from gsv_core.protocol import methods as m
from gsv_core.protocol.schemas.nodes import (
    AckResult,
    LogsGetParams,
    LogsGetResult,
    LogsResultParams,
    NodeExecEventParams,
    NodeForgetParams,
    NodeForgetResult,
    NodeProbeResultParams,
    NodesListResult,
    ToolInvokeParams,
    ToolResultParams,
)
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router

if TYPE_CHECKING:
    from gsv_core.gateway.app import Gateway


def _ack(dropped: bool) -> AckResult:
    return AckResult(dropped=True if dropped else None)


def register(router: Router, gateway: Gateway) -> None:
    nodes = gateway.nodes

    async def tool_invoke(ctx: RequestContext, params: ToolInvokeParams) -> dict[str, object]:
        result = await nodes.invoke(params.tool, params.args, gateway.tool_timeout())
        return {"result": result}

    async def tool_result(ctx: RequestContext, params: ToolResultParams) -> AckResult:
        return _ack(nodes.deliver_tool_result(ctx.peer, params.callId, params.result, params.error))

    async def logs_get(ctx: RequestContext, params: LogsGetParams) -> LogsGetResult:
        return await nodes.fetch_logs(params.nodeId, params.lines, gateway.tool_timeout())

    async def logs_result(ctx: RequestContext, params: LogsResultParams) -> AckResult:
        return _ack(nodes.deliver_logs(ctx.peer, params))

    async def probe_result(ctx: RequestContext, params: NodeProbeResultParams) -> AckResult:
        return _ack(nodes.deliver_probe(ctx.peer, params))

    async def exec_event(ctx: RequestContext, params: NodeExecEventParams) -> AckResult:
        node_id = ctx.peer.peer_id or ""
        return _ack(await gateway.exec_events.deliver(node_id, params))

    async def node_forget(ctx: RequestContext, params: NodeForgetParams) -> NodeForgetResult:
        return await nodes.forget(params.nodeId.strip(), params.force)

    async def nodes_list(ctx: RequestContext, params: object) -> NodesListResult:
        inventory = nodes.inventory()
        return NodesListResult(nodes=inventory, count=len(inventory))

    router.add(m.TOOL_INVOKE, tool_invoke, ToolInvokeParams)
    router.add(m.TOOL_RESULT, tool_result, ToolResultParams)
    router.add(m.LOGS_GET, logs_get, LogsGetParams)
    router.add(m.LOGS_RESULT, logs_result, LogsResultParams)
    router.add(m.NODE_PROBE_RESULT, probe_result, NodeProbeResultParams)
    router.add(m.NODE_EXEC_EVENT, exec_event, NodeExecEventParams)
    router.add(m.NODE_FORGET, node_forget, NodeForgetParams)
    router.add(m.NODES_LIST, nodes_list)
    gateway.events.update({events.TOOL_INVOKE, events.LOGS_GET, events.NODE_PROBE})
