"""Pairing methods (docs/protocol.md#methods): pending requests of unknown senders, approve
(allow them and welcome them) and reject."""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from gsv_core.authority import guest_area
from gsv_core.gateway.handlers.routes import Routes
from gsv_core.pairing import pending_pair_wire
from gsv_core.protocol import methods as m
from gsv_core.protocol.schemas.channels import PairApproveParams
from gsv_core.protocol.schemas.channels import PairParams
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway


# approving a second person while every DM goes to the owner's main session, so the owner is warned
SHARED_MAIN_SESSION = (
    "session.dmScope is main: this person's direct messages land in your own main "
    "session, with its history and memory. Give each person their own session with: "
    "gsv config set session.dmScope per-channel-peer"
)


OWNER_REACH = "an owner: the agent acts for them as for you (files, nodes, approvals)"


def guest_reach_words(channel: str, sender_id: str) -> str:
    """What an approved guest may do, in a sentence (docs/security.md)."""
    return (
        f"a guest: they chat with the agent, whose runs for them reach only their own "
        f"folder ({guest_area({'channel': channel, 'senderId': sender_id})}/), the web "
        f"and this conversation; no node or MCP tool unless channels.{channel}.guestTools "
        "grants it, and never your files, memory, sessions, schedule or approvals"
    )


def register(router: Router, gateway: Gateway) -> None:
    route = Routes(router)
    manager = gateway.channels

    @route(m.PAIR_LIST)
    async def pair_list(ctx: RequestContext, params: object) -> dict[str, Any]:
        pending = await manager.pairing.pending(gateway.now_ms(), manager.pairing_ttl_ms())
        return {"pairs": {f"{p.channel}:{p.sender_id}": pending_pair_wire(p) for p in pending}}

    @route(m.PAIR_APPROVE, PairApproveParams)
    async def pair_approve(ctx: RequestContext, params: PairApproveParams) -> dict[str, Any]:
        result = await manager.approve(params.channel, params.senderId, owner=params.owner)
        result["reach"] = (
            OWNER_REACH if params.owner else guest_reach_words(params.channel, result["senderId"])
        )
        if gateway.config.setting("session.dmScope") == "main":
            result["warning"] = SHARED_MAIN_SESSION
        return result

    @route(m.PAIR_REJECT, PairParams)
    async def pair_reject(ctx: RequestContext, params: PairParams) -> dict[str, Any]:
        return await manager.reject(params.channel, params.senderId)
