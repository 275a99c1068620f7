"""GatewayClient against a real gateway: calls, errors, events, reconnect after restart."""

from __future__ import annotations

import asyncio
import json
import random
import socket
from pathlib import Path

import pytest
from websockets.asyncio.server import ServerConnection
from websockets.asyncio.server import serve as ws_serve

from gsv_core.client import Backoff
from gsv_core.client import ClientIdentity
from gsv_core.client import GatewayClient
from gsv_core.errors import ConnectionClosed
from gsv_core.errors import GatewayUnreachable
from gsv_core.errors import InvalidConnectParams
from gsv_core.errors import InvalidParams
from gsv_core.errors import NotFound
from gsv_core.errors import TimedOut
from gsv_core.errors import Unauthorized
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from gsv_core.localconfig import generate_token
from gsv_core.localconfig import get_secret
from gsv_core.localconfig import set_secret


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_call_returns_payloads_and_raises_the_handlers_error_class(
    gateway: RunningGateway,
) -> None:
    """call() gives the payload, or raises the GsvError subclass for the wire code."""
    async with GatewayClient(gateway.url, token=gateway.token) as client:
        assert client.hello is not None and client.hello["type"] == "hello-ok"
        value = await client.call("config.get", {"path": "session.mainKey"})
        assert value == {"path": "session.mainKey", "value": "main"}
        with pytest.raises(NotFound, match="Unknown method: nope"):
            await client.call("nope")
        with pytest.raises(InvalidParams):
            await client.call("config.set", {"path": "cron.maxJobs", "value": "many"})


async def test_nothing_listening_raises_gateway_unreachable() -> None:
    """A refused connect is GatewayUnreachable (the CLI turns it into exit 3)."""
    client = GatewayClient(f"ws://127.0.0.1:{_free_port()}/ws", connect_timeout=5)
    with pytest.raises(GatewayUnreachable, match="cannot reach the gateway"):
        await client.connect()


async def test_handshake_failures_raise_their_error(tmp_path: Path) -> None:
    """A wrong token raises Unauthorized; a node without tools raises 103."""
    config = ServerConfig(database=tmp_path / "g.db")
    async with serve(config, port=0) as running:
        with pytest.raises(Unauthorized):
            await GatewayClient(running.url, token="wrong").connect()
        with pytest.raises(InvalidConnectParams, match="requires tools"):
            await GatewayClient(
                running.url, token=running.token, identity=ClientIdentity(mode="node")
            ).connect()


async def test_events_are_delivered_in_order(gateway: RunningGateway) -> None:
    """events() yields the gateway's evt frames with their seq."""
    identity = ClientIdentity(id="evt-client")
    async with GatewayClient(gateway.url, token=gateway.token, identity=identity) as client:
        peer = gateway.gateway.registry.clients["evt-client"]
        peer.send_event("chat", {"state": "delta", "text": "he"})
        peer.send_event("chat", {"state": "delta", "text": "llo"})
        received = []
        async for event in client.events():
            received.append(event)
            if len(received) == 2:
                break
    assert [e.payload["text"] for e in received] == ["he", "llo"]
    assert [e.seq for e in received] == [1, 2]


async def test_calls_after_close_fail_and_events_end(gateway: RunningGateway) -> None:
    """A closed client refuses calls with ConnectionClosed and its events() iterator ends."""
    client = GatewayClient(gateway.url, token=gateway.token)
    await client.connect()
    await client.close()
    with pytest.raises(ConnectionClosed):
        await client.call("config.get")
    assert [e async for e in client.events()] == []


async def test_a_call_waits_no_longer_than_its_timeout(gateway: RunningGateway) -> None:
    """With the gateway gone and reconnect on, a call ends with TimedOut at its timeout."""
    client = GatewayClient(
        gateway.url, token=gateway.token, reconnect=True, backoff=Backoff(base=60, cap=60)
    )
    await client.connect()
    gateway.server.close()  # stop accepting and drop the connection
    await gateway.server.wait_closed()
    try:
        with pytest.raises(TimedOut):
            await client.call("config.get", timeout=0.2)
    finally:
        await client.close()


async def test_the_client_reconnects_after_a_gateway_restart(tmp_path: Path) -> None:
    """With reconnect on, a restarted gateway on the same port is found again and calls work."""
    port = _free_port()
    config = ServerConfig(database=tmp_path / "restart.db")
    reconnects: list[str] = []

    async def on_connected(hello: dict[str, object]) -> None:
        reconnects.append(str(hello["server"]["connectionId"]))  # type: ignore[index]

    backoff = Backoff(base=0.01, cap=0.05, rng=random.Random(1))
    set_secret("gateway.token", generate_token())  # both gateways adopt the owner's token
    client = GatewayClient(
        f"ws://127.0.0.1:{port}/ws", token=get_secret("gateway.token"), reconnect=True,
        backoff=backoff, on_connected=on_connected,
    )  # fmt: skip
    try:
        async with serve(config, port=port):
            await client.connect()
            await client.call("config.set", {"path": "userTimezone", "value": "Asia/Tokyo"})
        async with serve(config, port=port):
            # the call waits for the reconnect, then succeeds against the new gateway
            value = await client.call("config.get", {"path": "userTimezone"}, timeout=10)
    finally:
        await client.close()
    assert value["value"] == "Asia/Tokyo"
    assert len(reconnects) == 2 and reconnects[0] != reconnects[1]


def test_backoff_is_jittered_exponential_and_capped() -> None:
    """Delays double up to the cap, each scaled by a jitter in [0.5, 1]."""
    backoff = Backoff(base=1, cap=30, rng=random.Random(7))
    delays = [backoff.next_delay() for _ in range(10)]
    ceilings = [min(30, 2**n) for n in range(10)]
    for delay, ceiling in zip(delays, ceilings, strict=True):
        assert ceiling * 0.5 <= delay <= ceiling
    assert max(delays) <= 30
    backoff.reset()
    assert backoff.next_delay() <= 1


async def test_concurrent_calls_on_one_connection_each_get_their_answer(
    gateway: RunningGateway,
) -> None:
    """Many calls in flight at once are matched to their responses by id."""
    async with GatewayClient(gateway.url, token=gateway.token) as client:
        paths = ["model.provider", "model.id", "userTimezone", "session.mainKey"] * 25
        results = await asyncio.gather(*(client.call("config.get", {"path": p}) for p in paths))
    assert [r["path"] for r in results] == paths


async def test_a_call_waits_behind_queued_frames_and_gives_up_at_its_timeout() -> None:
    """With the socket full a call is sent in order behind what is queued; a call the
    gateway never answers raises TimedOut and is forgotten."""
    received: list[str | bytes] = []
    resume = asyncio.Event()

    async def slow_gateway(ws: ServerConnection) -> None:
        hello = json.loads(await ws.recv())
        payload = {"type": "hello-ok", "protocol": 1, "server": {"version": "t",
                   "connectionId": "c"}, "features": {"methods": [], "events": []}}  # fmt: skip
        await ws.send(
            json.dumps({"type": "res", "id": hello["id"], "ok": True, "payload": payload})
        )
        ws.transport.pause_reading()
        await resume.wait()
        ws.transport.resume_reading()
        async for message in ws:
            received.append(message)  # answers nothing: the call must time out

    async with ws_serve(slow_gateway, "127.0.0.1", 0, compression=None, max_size=None) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        client = GatewayClient(f"ws://127.0.0.1:{port}/ws")
        await client.connect()
        try:
            chunk = b"\x00" * (256 * 1024)
            sends = [asyncio.ensure_future(client.send_binary(chunk)) for _ in range(64)]
            await asyncio.sleep(0.05)  # the socket buffers fill up
            assert not all(s.done() for s in sends)
            call = client.call("tool.result", {"callId": "c1", "result": {}}, timeout=1.0)
            calling = asyncio.ensure_future(call)
            resume.set()
            await asyncio.gather(*sends)
            with pytest.raises(TimedOut, match=r"tool\.result timed out after 1s"):
                await calling
        finally:
            await client.close()
    assert len(received) == 65 and all(m == chunk for m in received[:64])
    assert json.loads(received[64])["method"] == "tool.result"
