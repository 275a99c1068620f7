"""`connect`: the handshake of docs/protocol.md#connect.

Order: params shape (103) -> protocol range contains 1 (102) -> mode specifics (103) ->
credential for that mode (401/403/429, see `gateway.auth`; the socket then closes with
4001 *after* the response is sent; the original closed the socket before replying) ->
registration, replacing an older connection with the same id. A credential is always required.

A join code is only checked before registration; it is spent, and its credential minted,
once nothing can refuse the connection any more (for a node, after the one connection per
id rule's 409), so a refused connect spends no code and revokes no credential.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from typing import Any

from pydantic import ValidationError

from gsv_core.errors import Forbidden
from gsv_core.errors import InvalidConnectParams
from gsv_core.errors import RateLimited
from gsv_core.errors import Unauthorized
from gsv_core.errors import UnsupportedProtocol
from gsv_core.gateway.auth import WEB
from gsv_core.gateway.auth import Admission
from gsv_core.gateway.auth import sign_in_ends
from gsv_core.gateway.handlers.auth import close_sockets_of
from gsv_core.mcp.names import MCP_PREFIX
from gsv_core.protocol import PROTOCOL_VERSION
from gsv_core.protocol.close_codes import CloseCode
from gsv_core.protocol.methods import CHANNEL
from gsv_core.protocol.methods import CLIENT
from gsv_core.protocol.methods import CONNECT
from gsv_core.protocol.methods import NODE
from gsv_core.protocol.schemas.connect import ConnectParams
from gsv_core.protocol.schemas.connect import ConnectResult
from gsv_core.protocol.schemas.connect import Features
from gsv_core.protocol.schemas.connect import ServerInfo
from gsv_core.protocol.schemas.connect import ToolDefinition
from gsv_core.protocol.schemas.nodes import TOOL_SEPARATOR
from gsv_core.protocol.schemas.nodes import NodeRuntime
from gsv_core.protocol.schemas.nodes import validate_node_runtime
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router
from gsv_core.rpc.dispatch import params_error
from gsv_core.storage.credentials import Credential
from gsv_core.storage.credentials import Redeemed

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway

CLOSE_UNAUTHORIZED = (CloseCode.UNAUTHORIZED, "Unauthorized")
# `{nodeId}__{tool}` is the name the model sees: it must be a valid LLM tool name (the
# providers' limit, `^[A-Za-z0-9_-]{1,64}$`) that splits back at its first `__`, so a node
# id has no `__` and does not end in `_`; the 64 characters count the combined name.
MODEL_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MODEL_TOOL_NAME_MAX = 64
NODE_ID = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_))*(?<!_)$")
NODE_ID_MAX = MODEL_TOOL_NAME_MAX - len(TOOL_SEPARATOR) - 1


def register(router: Router, gateway: Gateway) -> None:
    async def connect(ctx: RequestContext, raw: Any) -> ConnectResult:
        params = _parse(raw)
        _check_protocol(params)
        node_shape = _check_mode(params)
        admission = await _admit(ctx, params, gateway)
        issued = await _register(ctx, params, gateway, node_shape, admission)
        _keep_credential(ctx, gateway, issued.credential if issued else admission.credential)
        if issued is not None:
            close_sockets_of(gateway, issued.replaced)  # e.g. a channel's other adapters
        ctx.peer.connected = True
        ctx.peer.mode = params.client.mode
        node = gateway.nodes.online(params.client.id) if params.client.mode == NODE else None
        return ConnectResult(
            protocol=PROTOCOL_VERSION,
            server=ServerInfo(version=gateway.version, connectionId=ctx.peer.connection_id),
            features=Features(methods=router.methods(), events=sorted(gateway.events)),
            approvalKey=node.approval_key if node is not None else None,
            credential=issued.token if issued else None,
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
    """`minProtocol: 1` is always served, whatever `maxProtocol` says (as the original); a
    lower `minProtocol` is served when the range reaches 1."""
    low, high = params.minProtocol, params.maxProtocol
    if low == PROTOCOL_VERSION or low < PROTOCOL_VERSION <= (high if high is not None else low):
        return
    asked = f"{low}-{high}" if high is not None else f"{low}"
    raise UnsupportedProtocol(
        f"Unsupported protocol version: this gateway speaks {PROTOCOL_VERSION}, "
        f"the client asked for {asked}",
        details={"supported": [PROTOCOL_VERSION]},
    )


NodeShape = tuple[list[ToolDefinition], NodeRuntime]


def _check_mode(params: ConnectParams) -> NodeShape | None:
    """Mode-specific shape checks, before any credential is looked at: a node's tools
    and runtime (so a malformed node hears 103, whatever its credential)."""
    client = params.client
    if client.mode not in (CLIENT, NODE, CHANNEL):
        raise InvalidConnectParams(
            f"Invalid client mode: {client.mode!r} (expected client, node or channel)"
        )
    if client.mode == NODE:
        tools = _node_tools(client.id, params)
        return tools, validate_node_runtime(client.id, tools, params.nodeRuntime)
    if client.mode == CHANNEL and not client.channel:
        raise InvalidConnectParams("Channel mode requires channel field")
    return None


async def _admit(ctx: RequestContext, params: ConnectParams, gateway: Gateway) -> Admission:
    try:
        peer = ctx.peer
        return await gateway.auth.admit(params, peer.remote, peer.host, peer.browser)
    except (Unauthorized, Forbidden, RateLimited):
        ctx.close_after_reply = CLOSE_UNAUTHORIZED
        raise


async def _accept(ctx: RequestContext, admission: Admission, gateway: Gateway) -> Redeemed | None:
    """Spend the connect's join code, if any (see `gateway.auth`)."""
    try:
        return await gateway.auth.accept(admission)
    except Unauthorized:
        ctx.close_after_reply = CLOSE_UNAUTHORIZED
        raise


def _keep_credential(ctx: RequestContext, gateway: Gateway, credential: Credential | None) -> None:
    """Which credential admitted this socket; a browser's also closes it when its
    sign-in ends (`gateway.web_sessions`)."""
    ctx.peer.credential_id = credential.id if credential else None
    ctx.peer.sign_in_ends = None
    if credential is not None and credential.role == WEB:
        ctx.peer.sign_in_ends = sign_in_ends(credential)
        gateway.web_sessions.wake()


async def _register(
    ctx: RequestContext,
    params: ConnectParams,
    gateway: Gateway,
    node: NodeShape | None,
    admission: Admission,
) -> Redeemed | None:
    """Register the peer under its id; returns the credential its join code minted."""
    client = params.client
    if ctx.peer.connected:  # a second `connect` on one socket re-registers it
        await gateway.on_disconnect(ctx.peer)
    if node is not None:
        tools, runtime = node
        ctx.peer.peer_id = client.id
        minted: list[Redeemed | None] = []

        async def accept() -> None:
            minted.append(await _accept(ctx, admission, gateway))

        await gateway.nodes.attach(
            ctx.peer, client.id, tools, runtime, (client.platform, client.version), accept
        )
        return minted[0]
    issued = await _accept(ctx, admission, gateway)
    if client.mode == CLIENT:
        gateway.registry.register_client(ctx.peer, client.id)
    else:
        channel, account_id = client.channel or "", client.accountId or client.id
        gateway.registry.register_channel(ctx.peer, channel, account_id)
        await gateway.channels.connected(channel, account_id)  # replies that waited go now
    ctx.peer.peer_id = client.id
    return issued


def _node_tools(node_id: str, params: ConnectParams) -> list[ToolDefinition]:
    """A node's tools, checked so that `{nodeId}__{tool}` is a valid, unique LLM tool name."""
    if not NODE_ID.match(node_id) or len(node_id) > NODE_ID_MAX:
        raise InvalidConnectParams(
            f"Invalid node id {node_id!r}: use letters, digits, '-' and single '_' "
            f"(not at the end; at most {NODE_ID_MAX} characters), e.g. node-laptop"
        )
    if node_id.lower() == "gsv" or node_id.lower().startswith(MCP_PREFIX):
        # `gsv__*` names the gateway's own tools and `mcp_*__*` MCP servers' tools: a
        # node so named would have its calls routed there
        raise InvalidConnectParams(
            f"Invalid node id {node_id!r}: 'gsv' and ids starting with {MCP_PREFIX!r} are "
            "reserved for the gateway's own and MCP tools"
        )
    tools = params.tools or []
    if not tools:
        raise InvalidConnectParams("Node mode requires tools")
    names = [tool.name for tool in tools]
    for name in names:
        _check_model_tool_name(node_id, name)
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InvalidConnectParams(
            f"Duplicate tool name in node {node_id}: {', '.join(duplicates)}"
        )
    return tools


def _check_model_tool_name(node_id: str, name: str) -> None:
    """Refuse a tool whose combined name would be refused by the model providers."""
    combined = f"{node_id}{TOOL_SEPARATOR}{name}"
    if MODEL_TOOL_NAME.match(combined):
        return
    rule = (
        f"the name the model sees, {{nodeId}}__{{tool}} ({combined!r}), must be at most "
        f"{MODEL_TOOL_NAME_MAX} characters of letters, digits, '_' and '-'"
    )
    broken = (
        f"it is {len(combined)} characters"
        if len(combined) > MODEL_TOOL_NAME_MAX
        else "it has other characters"
    )
    raise InvalidConnectParams(f"Invalid tool name {name!r} in node {node_id}: {rule}; {broken}")
