"""Raw-socket helpers for protocol tests: frames exactly as a foreign peer would send them."""

from __future__ import annotations

import json
import uuid
from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect

# the owner token a gateway started in this test keeps in the local secret store
FROM_STORE = "<from the local secret store>"


def owner_token() -> str | None:
    from gsv_core.localconfig import get_secret

    return get_secret("gateway.token")


def connect_params(
    mode: str = "client",
    client_id: str | None = None,
    token: str | None = FROM_STORE,
    channel: str | None = None,
    account_id: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """Connect params as a foreign peer sends them; `token=None` sends no auth at all."""
    params: dict[str, Any] = {
        "minProtocol": 1,
        "maxProtocol": 1,
        "client": {
            "id": client_id or f"{mode}-{uuid.uuid4()}",
            "version": "test",
            "platform": "linux",
            "mode": mode,
        },
    }
    if channel is not None:
        params["client"]["channel"] = channel
    if account_id is not None:
        params["client"]["accountId"] = account_id
    if token == FROM_STORE:
        token = owner_token()
    if token is not None:
        params["auth"] = {"token": token}
    params.update(extra)
    if mode == "node" and params.get("tools") and "nodeRuntime" not in params:
        params["nodeRuntime"] = node_runtime(params["tools"])
    return params


def node_runtime(tools: list[dict[str, Any]], capability: str = "shell.exec") -> dict[str, Any]:
    """A minimal valid NodeRuntimeInfo: every tool mapped to one capability."""
    return {
        "hostCapabilities": [capability],
        "toolCapabilities": {tool["name"]: [capability] for tool in tools if "name" in tool},
    }


async def open_raw(url: str, **kwargs: Any) -> ClientConnection:
    return await connect(url, compression=None, proxy=None, **kwargs)


async def request(
    ws: ClientConnection, method: str, params: Any = None, frame_id: str | None = None
) -> dict[str, Any]:
    """Send one req and return its res (events arriving meanwhile are skipped)."""
    frame_id = frame_id or str(uuid.uuid4())
    frame: dict[str, Any] = {"type": "req", "id": frame_id, "method": method}
    if params is not None:
        frame["params"] = params
    await ws.send(json.dumps(frame))
    while True:
        reply = json.loads(await ws.recv())
        if reply.get("type") == "res" and reply.get("id") == frame_id:
            return reply


async def handshake(ws: ClientConnection, **kwargs: Any) -> dict[str, Any]:
    """`connect`; a node or channel with no token given first joins the way a real one
    does: the owner asks for a one-time code on this socket, then it connects with it."""
    mode = kwargs.get("mode", "client")
    kwargs.setdefault("client_id", f"{mode}-{uuid.uuid4()}")  # the same id for both steps
    if mode != "client" and "token" not in kwargs and "auth" not in kwargs:
        params = connect_params(**kwargs)
        subject = params["client"].get("channel") if mode == "channel" else params["client"]["id"]
        await handshake(ws)
        invite = await request(ws, "auth.invite", {"role": mode, "subject": subject})
        assert invite["ok"], invite
        kwargs = {**kwargs, "token": None, "auth": {"joinCode": invite["payload"]["code"]}}
    reply = await request(ws, "connect", connect_params(**kwargs))
    assert reply["ok"], reply
    return reply["payload"]


async def credential(gateway: Any, role: str, subject: str) -> str:
    """A node or channel credential, minted the way a join code mints one."""
    auth = gateway.gateway.auth
    code, _ = await auth.invite(role, subject)
    redeemed = await auth.store.redeem(code, role, subject, gateway.gateway.now_ms())
    assert redeemed is not None
    return str(redeemed.token)


async def connect_minimal(url: str, client: dict[str, Any], **params: Any) -> ClientConnection:
    """A socket connected with the original's smallest frame: `minProtocol` and `client`
    (`{id, mode}`, no version or platform) plus what `params` adds (auth, tools, ...)."""
    ws = await open_raw(url)
    reply = await request(ws, "connect", {"minProtocol": 1, "client": client, **params})
    assert reply["ok"], reply
    return ws
