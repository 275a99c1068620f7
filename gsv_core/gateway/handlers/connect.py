"""`connect`: the handshake of spec 2.3, with our fixes.

Order: params shape (103) -> protocol range contains 1 (102) -> token (401, then the
socket closes with 4001 *after* the response is sent, fix of 18.5) -> mode specifics
(103) -> registration, replacing an older connection with the same id.
"""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from gsv_core.errors import InvalidConnectParams, Unauthorized, UnsupportedProtocol
from gsv_core.gateway.registry import NodeEntry
from gsv_core.protocol import PROTOCOL_VERSION
from gsv_core.protocol.methods import CHANNEL, CLIENT, CONNECT, NODE
from gsv_core.protocol.schemas.connect import (
    ConnectParams,
    ConnectResult,
    Features,
    ServerInfo,
)
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router, params_error

if TYPE_CHECKING:
    from gsv_core.gateway.app import Gateway

CLOSE_UNAUTHORIZED = (4001, "Unauthorized")


def register(router: Router, gateway: Gateway) -> None:
    async def connect(ctx: RequestContext, raw: Any) -> ConnectResult:
        params = _parse(raw)
        _check_protocol(params)
        _check_token(ctx, params, gateway.config.auth_token)
        _register(ctx, params, gateway)
        ctx.peer.connected = True
        ctx.peer.mode = params.client.mode
        return ConnectResult(
            protocol=PROTOCOL_VERSION,
            server=ServerInfo(version=gateway.version, connectionId=ctx.peer.connection_id),
            features=Features(methods=router.methods(), events=sorted(gateway.events)),
        )

    router.add(CONNECT, connect)


def _parse(raw: Any) -> ConnectParams:
    if not isinstance(raw, dict):
        raise InvalidConnectParams("connect params must be an object")
    try:
        return ConnectParams.model_validate(raw)
    except ValidationError as exc:
        raise params_error(CONNECT, exc, InvalidConnectParams) from None


def _check_protocol(params: ConnectParams) -> None:
    if not params.minProtocol <= PROTOCOL_VERSION <= params.maxProtocol:
        raise UnsupportedProtocol(
            f"Unsupported protocol version: this gateway speaks {PROTOCOL_VERSION}, "
            f"the client asked for {params.minProtocol}-{params.maxProtocol}",
            details={"supported": [PROTOCOL_VERSION]},
        )


def _check_token(ctx: RequestContext, params: ConnectParams, expected: str | None) -> None:
    if expected is None:
        return
    given = (params.auth.token if params.auth else None) or ""
    if not hmac.compare_digest(given.encode(), expected.encode()):
        ctx.close_after_reply = CLOSE_UNAUTHORIZED
        raise Unauthorized("Unauthorized: invalid or missing token")


def _register(ctx: RequestContext, params: ConnectParams, gateway: Gateway) -> None:
    client = params.client
    registry = gateway.registry
    if client.mode == CLIENT:
        registry.register_client(ctx.peer, client.id)
    elif client.mode == NODE:
        tools = params.tools or []
        if not tools:
            raise InvalidConnectParams("Node mode requires tools")
        names = [tool.name for tool in tools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise InvalidConnectParams(
                f"Duplicate tool name in node {client.id}: {', '.join(duplicates)}"
            )
        entry = NodeEntry(ctx.peer, tools, params.nodeRuntime, client.platform, client.version)
        registry.register_node(ctx.peer, client.id, entry)
    elif client.mode == CHANNEL:
        if not client.channel:
            raise InvalidConnectParams("Channel mode requires channel field")
        registry.register_channel(ctx.peer, client.channel, client.accountId or client.id)
    else:
        raise InvalidConnectParams(
            f"Invalid client mode: {client.mode!r} (expected client, node or channel)"
        )
    ctx.peer.peer_id = client.id
