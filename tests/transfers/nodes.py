"""Transfer test parts: a real node daemon in a tmp dir, a hand-written source node that
speaks the transfer protocol over a raw socket (to stall, vanish or lie), and helpers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection

from gsv_core.client import Backoff
from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from gsv_core.node.daemon import NodeDaemon
from gsv_core.node.daemon import NodeSettings
from gsv_core.protocol.frames import MAX_TRANSFER_CHUNK
from gsv_core.protocol.frames import encode_binary_frame
from tests.wire import handshake
from tests.wire import open_raw
from tests.wire import owner_token


@asynccontextmanager
async def node(url: str, workspace: Path, node_id: str) -> AsyncIterator[NodeDaemon]:
    workspace.mkdir(parents=True, exist_ok=True)
    daemon = NodeDaemon(NodeSettings(url=url, node_id=node_id, workspace=workspace,
                                     backoff=Backoff(base=0.05, cap=0.2),
                                     owner_token=owner_token()))  # fmt: skip
    stop = asyncio.Event()
    task = asyncio.create_task(daemon.run(stop))
    await asyncio.wait_for(daemon.connected.wait(), 30)
    try:
        yield daemon
    finally:
        stop.set()
        await asyncio.wait_for(task, 60)


def workspace_of(gw: RunningGateway) -> Path:
    return Path(gw.gateway.db.path).parent / "workspace" / "agents" / "main"


async def transfer(gw: RunningGateway, source: str, destination: str) -> dict[str, Any]:
    async with GatewayClient(gw.url, token=gw.token) as client:
        result: dict[str, Any] = await client.call(
            "transfer.request", {"source": source, "destination": destination}, timeout=300
        )
    return result


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*.part"))


async def until(what: str, check: Any) -> None:
    """Wait for a condition another task or process brings about."""
    for _ in range(3000):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


class RawSource:
    """A source node written by hand: it announces `size` bytes, sends `body` when told to
    start, then `then`: "complete" (claiming `sha256`), "close" (vanish) or "stall"."""

    def __init__(self, ws: ClientConnection, size: int, body: bytes, then: str,
                 sha256: str = "") -> None:  # fmt: skip
        self.ws, self.size, self.body, self.then, self.sha256 = ws, size, body, then, sha256
        self.ends: list[dict[str, Any]] = []  # transfer.end events this source was sent

    async def serve(self) -> None:
        with contextlib.suppress(Exception):  # the socket closing ends the conversation
            async for raw in self.ws:
                frame = json.loads(raw)
                if frame.get("type") == "evt":
                    await self._on_event(frame["event"], frame.get("payload") or {})

    async def _on_event(self, event: str, payload: dict[str, Any]) -> None:
        transfer_id = payload.get("transferId")
        if event == "transfer.send":
            await self._request("transfer.meta", {"transferId": transfer_id, "size": self.size})
        elif event == "transfer.start":
            for at in range(0, len(self.body), MAX_TRANSFER_CHUNK):
                chunk = self.body[at : at + MAX_TRANSFER_CHUNK]
                await self.ws.send(encode_binary_frame(int(transfer_id), chunk))
            if self.then == "close":
                await self.ws.close()
            elif self.then == "complete":
                params = {"transferId": transfer_id, "sha256": self.sha256}
                await self._request("transfer.complete", params)
        elif event == "transfer.end":
            self.ends.append(payload)

    async def _request(self, method: str, params: dict[str, Any]) -> None:
        frame = {"type": "req", "id": str(uuid.uuid4()), "method": method, "params": params}
        await self.ws.send(json.dumps(frame))


@asynccontextmanager
async def raw_source(url: str, node_id: str, size: int, body: bytes, then: str,
                     sha256: str = "") -> AsyncIterator[RawSource]:  # fmt: skip
    """A connected RawSource serving in the background."""
    async with await open_raw(url) as ws:
        await handshake(ws, mode="node", client_id=node_id, tools=[{"name": "Read"}])
        source = RawSource(ws, size, body, then, sha256)
        task = asyncio.create_task(source.serve())
        try:
            yield source
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


@asynccontextmanager
async def raw_destination(url: str, node_id: str) -> AsyncIterator[asyncio.Event]:
    """A destination node written by hand: it accepts a transfer and then reads nothing
    more, so the gateway's sends back up; leaving the context drops its socket. Yields an
    event set once it has accepted."""
    accepted = asyncio.Event()
    async with await open_raw(url) as ws:
        await handshake(ws, mode="node", client_id=node_id, tools=[{"name": "Write"}])

        async def accept_then_stop_reading() -> None:
            async for raw in ws:
                frame = json.loads(raw) if isinstance(raw, str) else {}
                if frame.get("type") == "evt" and frame.get("event") == "transfer.receive":
                    params = {"transferId": frame["payload"]["transferId"]}
                    request = {"type": "req", "id": str(uuid.uuid4()),
                               "method": "transfer.accept", "params": params}  # fmt: skip
                    await ws.send(json.dumps(request))
                    accepted.set()
                    return  # the chunks now pile up until the socket goes

        task = asyncio.create_task(accept_then_stop_reading())
        try:
            yield accepted
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            ws.transport.abort()  # vanish: no close handshake behind unread megabytes
