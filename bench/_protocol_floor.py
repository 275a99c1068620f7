"""The protocol floor of a node tool call: the frames of seed 001, sent by the least code
that can still say them, on websockets' public asyncio API.

- `gateway()`: reads each frame with `json.loads` and forwards it inline in the
  connection's reader: a client's `tool.invoke` req becomes a `tool.invoke` evt to the
  node; the node's `tool.result` req becomes the client's res, then the node's ack (a
  req is always answered). No auth, no params validation, no approval policy, no
  timeouts, no tasks: what no real gateway may leave out.
- `node()`: answers each `tool.invoke` evt by reading the named file and numbering its
  lines, as the Read tool does, with no path checks and no guard.

bench/tool_roundtrip.py times a client's `tool.invoke` through these two, each in a
process of its own as the real gateway and node are: the part of a call that is
websockets, JSON, the kernel and the processes, which no code of ours can go below.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection
from websockets.asyncio.server import serve


def _frame(**fields: Any) -> str:
    return json.dumps(fields, separators=(",", ":"))


async def gateway(until_closed: Any) -> None:
    """Serve until `until_closed()` returns; the first line printed is the ws:// URL."""
    nodes: list[ServerConnection] = []
    waiting: dict[str, tuple[ServerConnection, str]] = {}
    call_ids = itertools.count()
    seq = itertools.count(1)

    async def connection(ws: ServerConnection) -> None:
        async for message in ws:
            frame = json.loads(message)
            method = frame.get("method")
            if method == "tool.invoke":
                call_id = str(next(call_ids))
                waiting[call_id] = (ws, frame["id"])
                payload = {"callId": call_id, "tool": "Read", "args": frame["params"]["args"]}
                await nodes[0].send(
                    _frame(type="evt", event="tool.invoke", payload=payload, seq=next(seq))
                )
            elif method == "tool.result":
                client, request_id = waiting.pop(frame["params"]["callId"])
                result = {"result": frame["params"]["result"]}
                await client.send(_frame(type="res", id=request_id, ok=True, payload=result))
                await ws.send(_frame(type="res", id=frame["id"], ok=True, payload={}))
            elif method == "connect":  # the node says hello; it is answered when ready
                nodes.append(ws)
                await ws.send(_frame(type="res", id=frame["id"], ok=True, payload={}))

    async with serve(connection, "127.0.0.1", 0, compression=None, max_size=None) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        print(f"ws://127.0.0.1:{port}/", flush=True)
        await until_closed()


async def node(url: str, workspace: str, until_closed: Any) -> None:
    """Connect to the floor gateway at `url` and answer Read calls on `workspace`.

    It connects with websockets itself, as bench._servers.raw_socket does (no compression,
    no proxy, no size limit): that module runs this one, so this one imports nothing of it."""
    async with connect(url, compression=None, proxy=None, max_size=None) as ws:
        await ws.send(_frame(type="req", id="hello", method="connect", params={}))
        await ws.recv()
        print(url, flush=True)  # server_process waits for a first line
        answering = asyncio.create_task(_answer_calls(ws, Path(workspace)))
        await until_closed()
        answering.cancel()


async def _answer_calls(ws: ClientConnection, workspace: Path) -> None:
    ids = itertools.count()
    async for message in ws:
        frame = json.loads(message)
        if frame.get("type") != "evt":
            continue  # the gateway's ack
        payload = frame["payload"]
        text = (workspace / payload["args"]["path"]).read_text()
        lines = text.splitlines()
        content = "\n".join(f"{number}\t{line}" for number, line in enumerate(lines, 1))
        result = {"content": content, "lines": len(lines)}
        params = {"callId": payload["callId"], "result": result}
        await ws.send(_frame(type="req", id=str(next(ids)), method="tool.result", params=params))
