"""Heartbeat methods (docs/protocol.md#methods): status, start, trigger.

`heartbeat.trigger` runs the beat (without the checks) and waits for its end; besides
the protocol's `{ok, message, skipped?, skipReason?}` (docs/protocol.md#heartbeat) it
tells `sessionKey`, `delivered`, `heldBack` (why a reply was not delivered, e.g.
`heartbeat_ok`) and the `reply`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from gsv_core.gateway.handlers.routes import Routes
from gsv_core.heartbeat.state import BeatResult
from gsv_core.protocol import methods as m
from gsv_core.protocol.schemas.heartbeat import HeartbeatAgentParams
from gsv_core.protocol.schemas.heartbeat import HeartbeatTriggerParams
from gsv_core.routing import heartbeat_session_key
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router
from gsv_core.workspace.paths import validate_agent_id

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway


def trigger_result(agent_id: str, result: BeatResult) -> dict[str, Any]:
    """The `heartbeat.trigger` answer, with the spec's messages."""
    if result.status == "skipped":
        message = f"Heartbeat skipped for agent {agent_id}: {result.skip_reason}"
        return {"ok": True, "skipped": True, "skipReason": result.skip_reason, "message": message}
    if result.status == "error":
        return {"ok": False, "message": f"Heartbeat failed for agent {agent_id}: {result.error}"}
    key = heartbeat_session_key(agent_id)
    answer: dict[str, Any] = {
        "ok": True,
        "skipped": False,
        "message": f"Heartbeat triggered for agent {agent_id} (session: {key})",
        "sessionKey": key,
        "delivered": result.delivered,
        "reply": result.reply or "",
    }
    if result.held_back is not None:
        answer["heldBack"] = result.held_back
    if result.delivered_to is not None:
        answer["deliveredTo"] = result.delivered_to
    return answer


def _agent(raw: str | None) -> str | None:
    return validate_agent_id(raw.strip().lower()) if raw is not None else None


def register(router: Router, gateway: Gateway) -> None:
    route = Routes(router)

    @route(m.HEARTBEAT_STATUS, HeartbeatAgentParams)
    async def heartbeat_status(ctx: RequestContext, params: HeartbeatAgentParams) -> dict[str, Any]:
        return {"agents": gateway.heartbeat.status(_agent(params.agentId))}

    @route(m.HEARTBEAT_START, HeartbeatAgentParams)
    async def heartbeat_start(ctx: RequestContext, params: HeartbeatAgentParams) -> dict[str, Any]:
        agent = _agent(params.agentId)
        gateway.heartbeat.start(agent)
        return {"message": "Heartbeat scheduler started", "agents": gateway.heartbeat.status(agent)}

    @route(m.HEARTBEAT_TRIGGER, HeartbeatTriggerParams)
    async def heartbeat_trigger(
        ctx: RequestContext, params: HeartbeatTriggerParams
    ) -> dict[str, Any]:
        agent = _agent(params.agentId) or "main"
        return trigger_result(agent, await gateway.heartbeat.trigger(agent))
