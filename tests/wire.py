"""Raw-socket helpers for protocol tests: frames exactly as a foreign peer would send them."""

from __future__ import annotations

import json
import uuid
from typing import Any

from websockets.asyncio.client import ClientConnection, connect


def connect_params(
    mode: str = "client", client_id: str | None = None, token: str | None = None, **extra: Any
) -> dict[str, Any]:
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
    reply = await request(ws, "connect", connect_params(**kwargs))
    assert reply["ok"], reply
    return reply["payload"]
