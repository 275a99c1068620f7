"""File transfers end to end: a real gateway, real node daemons in tmp dirs, a client
asking with transfer.request (and the agent with gsv__Transfer): every mode and size,
failures that leave no partial file, spoofed frames, path escapes, bounded memory."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from gsv_core.client import GatewayClient
from gsv_core.errors import GsvError
from gsv_core.errors import InvalidParams
from gsv_core.errors import NotFound
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from gsv_core.paths import resolve_paths
from gsv_core.protocol.frames import encode_binary_frame
from tests.transfers.nodes import leftovers
from tests.transfers.nodes import node
from tests.transfers.nodes import raw_destination
from tests.transfers.nodes import transfer
from tests.transfers.nodes import until
from tests.transfers.nodes import workspace_of
from tests.wire import handshake
from tests.wire import open_raw


@pytest.mark.parametrize("size", [0, 1, 256 * 1024, 256 * 1024 + 1, 3_000_000])
async def test_node_to_node_copies_exact_bytes(
    gw: RunningGateway, pair: tuple[Path, Path], size: int
) -> None:
    """Every size arrives intact, with the byte count and sha256 in the result."""
    a, b = pair
    data = os.urandom(size)
    (a / "in.bin").write_bytes(data)
    result = await transfer(gw, "a:in.bin", "b:sub/out.bin")
    assert (b / "sub" / "out.bin").read_bytes() == data
    assert result["bytesTransferred"] == size
    assert result["sha256"] == hashlib.sha256(data).hexdigest()
    assert result["source"] == "a:in.bin" and result["destination"] == "b:sub/out.bin"
    assert leftovers(b) == []


async def test_node_to_workspace_and_back(gw: RunningGateway, pair: tuple[Path, Path]) -> None:
    """Upload into the agent's workspace, download to the other node: same bytes."""
    a, b = pair
    data = os.urandom(600_000)
    (a / "photo.png").write_bytes(data)
    up = await transfer(gw, "a:photo.png", "gsv:workspace/media/photo.png")
    assert up["mime"] == "image/png"
    assert (workspace_of(gw) / "media" / "photo.png").read_bytes() == data
    down = await transfer(gw, "gsv:workspace/media/photo.png", "b:copy.png")
    assert (b / "copy.png").read_bytes() == data and down["bytesTransferred"] == len(data)
    # finished transfers leave nothing in the journals of parts in progress
    for journal in (gw.gateway.db.path.parent / "transfer-parts.json",
                    resolve_paths().run_dir / "parts-b.json"):  # fmt: skip
        assert json.loads(journal.read_text()) == []


@pytest.mark.parametrize("size", [0, 1, 256 * 1024, 256 * 1024 + 1, 3_000_000])
async def test_node_to_workspace_round_trip_keeps_every_size(
    gw: RunningGateway, pair: tuple[Path, Path], size: int
) -> None:
    """Node -> workspace -> node at chunk boundaries: same bytes, count and sha256 each way."""
    a, b = pair
    data = os.urandom(size)
    (a / "in.bin").write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    up = await transfer(gw, "a:in.bin", "gsv:workspace/up/in.bin")
    assert (workspace_of(gw) / "up" / "in.bin").read_bytes() == data
    assert up["bytesTransferred"] == size and up["sha256"] == digest
    down = await transfer(gw, "gsv:workspace/up/in.bin", "b:back.bin")
    assert (b / "back.bin").read_bytes() == data
    assert down["bytesTransferred"] == size and down["sha256"] == digest
    assert leftovers(workspace_of(gw)) == [] and leftovers(b) == []


@pytest.mark.parametrize(
    ("source", "destination"),
    [("a:big.bin", "b:big.bin"), ("a:big.bin", "gsv:workspace/big.bin"),
     ("gsv:workspace/in/big.bin", "b:big.bin")],
)  # fmt: skip
async def test_a_50_mb_file_with_bounded_memory(
    gw: RunningGateway, pair: tuple[Path, Path], source: str, destination: str
) -> None:
    """50 MB in each mode while the gateway (in this process) never holds more than a
    few MB, even where it reads or writes the file itself."""
    a, b = pair
    origin = a / "big.bin" if source.startswith("a:") else workspace_of(gw) / "in" / "big.bin"
    origin.parent.mkdir(parents=True, exist_ok=True)
    chunk = os.urandom(1024 * 1024)
    with origin.open("wb") as fh:
        for _ in range(50):
            fh.write(chunk)
    tracemalloc.start()
    try:
        result = await transfer(gw, source, destination)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    target = b / "big.bin" if destination.startswith("b:") else workspace_of(gw) / "big.bin"
    assert result["bytesTransferred"] == 50 * 1024 * 1024
    assert target.stat().st_size == 50 * 1024 * 1024
    assert result["sha256"] == hashlib.sha256(chunk * 50).hexdigest()
    assert peak < 24 * 1024 * 1024, f"peak traced memory {peak / 1e6:.1f} MB"


async def test_a_missing_source_and_an_unwritable_destination(
    gw: RunningGateway, pair: tuple[Path, Path]
) -> None:
    """Both fail with a message naming the endpoint; nothing partial is left behind."""
    a, b = pair
    with pytest.raises(GsvError, match=r"source a:nope\.bin"):
        await transfer(gw, "a:nope.bin", "b:x.bin")
    (a / "in.bin").write_bytes(b"data")
    (b / "taken").mkdir()
    with pytest.raises(GsvError, match="destination b:taken"):
        await transfer(gw, "a:in.bin", "b:taken")
    with pytest.raises(NotFound, match="Not found in the workspace"):
        await transfer(gw, "gsv:workspace/none.txt", "b:x")
    assert leftovers(b) == [] and not (b / "x.bin").exists()


async def test_bad_endpoints_are_refused(gw: RunningGateway, pair: tuple[Path, Path]) -> None:
    """Malformed endpoints, unknown nodes, gsv-to-gsv and workspace escapes (never a raw storage key, never outside the agent's workspace) fail with clear errors."""
    cases = [
        ("no-colon-here", "b:x", InvalidParams, "invalid endpoint"),
        ("ghost:x", "b:x", GsvError, "Source node not connected: ghost"),
        ("gsv:workspace/a", "gsv:workspace/b", InvalidParams, "Cannot transfer from gsv to gsv"),
        ("a:x", "gsv:workspace/../../etc/passwd", InvalidParams, ".."),
        ("a:x", "gsv:other/place", InvalidParams, "gsv:workspace/"),
    ]
    (pair[0] / "x").write_bytes(b"1")
    for source, destination, error, text in cases:
        with pytest.raises(error) as raised:
            await transfer(gw, source, destination)
        assert text in raised.value.message, (source, destination, raised.value.message)


async def test_a_destination_that_vanishes_fails_fast_and_the_source_recovers(
    gw: RunningGateway, tmp_path: Path
) -> None:
    """Killing the destination mid-transfer fails the transfer with a clear error naming
    it, and the source is told to stop sending (no stuck state)."""
    (tmp_path / "a").mkdir()
    chunk = os.urandom(1024 * 1024)
    with (tmp_path / "a" / "big.bin").open("wb") as fh:
        for _ in range(40):
            fh.write(chunk)
    async with node(gw.url, tmp_path / "a", "a") as source:
        online = gw.gateway.nodes.online("a")
        assert online is not None
        link = online.peer
        dest = node(gw.url, tmp_path / "b", "b")
        await dest.__aenter__()
        task = asyncio.create_task(transfer(gw, "a:big.bin", "b:big.bin"))
        await until("a part file at the destination", lambda: leftovers(tmp_path / "b"))
        await dest.__aexit__(None, None, None)
        with pytest.raises(GsvError, match="Node disconnected: b"):
            await asyncio.wait_for(task, 60)
        await until("the source to stop", lambda: source.transfers.in_progress == 0)
        assert gw.gateway.transfers.active == 0
        still = gw.gateway.nodes.online("a")
        assert still is not None and still.peer is link, "the source kept its connection"
    assert leftovers(tmp_path / "b") == [] and not (tmp_path / "b" / "big.bin").exists()
    assert json.loads((resolve_paths().run_dir / "parts-b.json").read_text()) == []


async def test_a_destination_that_vanishes_stops_a_send_from_the_workspace(
    gw: RunningGateway, tmp_path: Path
) -> None:
    """Workspace -> node: a destination that stops reading and then drops ends the send
    at once with its reason, not after the idle timeout as a stall."""
    gw.gateway.transfers.idle_timeout = 45
    folder = workspace_of(gw)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "big.bin").write_bytes(os.urandom(40 * 1024 * 1024))
    async with GatewayClient(gw.url, token=gw.token) as client:
        params = {"source": "gsv:workspace/big.bin", "destination": "b:big.bin"}
        async with raw_destination(gw.url, "b") as accepted:
            task = asyncio.create_task(client.call("transfer.request", params, timeout=40))
            await asyncio.wait_for(accepted.wait(), 30)
        with pytest.raises(GsvError, match="Node disconnected: b"):
            await task
    assert gw.gateway.transfers.active == 0


async def test_spoofed_frames_from_another_connection_are_dropped(
    gw: RunningGateway, pair: tuple[Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    """A binary frame for a live transfer id from a socket not taking part is dropped and
    changes nothing."""
    a, b = pair
    data = os.urandom(2_000_000)
    (a / "in.bin").write_bytes(data)
    seen: list[int] = []
    original = gw.gateway.transfers.on_binary

    async def spy(peer: Any, frame: bytes) -> None:
        seen.append(int.from_bytes(frame[:4], "little"))
        await original(peer, frame)

    gw.gateway.transfers.on_binary = spy  # type: ignore[method-assign]
    async with await open_raw(gw.url) as intruder:
        await handshake(intruder, mode="node", client_id="intruder", tools=[{"name": "X"}])
        task = asyncio.create_task(transfer(gw, "a:in.bin", "b:out.bin"))
        await until("the source's first chunk", lambda: seen)
        for transfer_id in set(seen):
            await intruder.send(encode_binary_frame(transfer_id, b"EVIL" * 1000))
        await intruder.send(encode_binary_frame(12345, b"junk"))
        await task
    assert (b / "out.bin").read_bytes() == data
    assert "not its source" in caplog.text


async def test_binary_frames_before_connect_are_dropped(
    gw: RunningGateway, caplog: pytest.LogCaptureFixture
) -> None:
    """An unconnected socket's binary frame is logged and ignored; the socket stays open
    (transfers are bound to their two connections)."""
    async with await open_raw(gw.url) as ws:
        await ws.send(encode_binary_frame(1, b"x"))
        await ws.send(json.dumps({"type": "req", "id": "1", "method": "tools.list"}))
        reply = json.loads(await ws.recv())
    assert reply["error"]["code"] == 101
    assert "before connect" in caplog.text


async def test_the_agent_moves_files_with_gsv_transfer(tmp_path: Path) -> None:
    """gsv__Transfer from a (scripted) model run copies the file and returns the result."""
    from tests.fakes.provider import FakeProvider
    from tests.fakes.provider import call

    fake = FakeProvider()
    fake.enqueue(
        call("gsv__Transfer", {"source": "a:notes.txt", "destination": "gsv:workspace/notes.txt"})
    )
    fake.enqueue("Copied.")
    config = ServerConfig(database=tmp_path / "data" / "gsv.db", provider_factory=fake.factory)
    async with serve(config, port=0) as gw, node(gw.url, tmp_path / "a", "a"):
        (tmp_path / "a" / "notes.txt").write_text("hello")
        async with GatewayClient(gw.url, token=gw.token) as client:
            await client.call("chat.send", {"sessionKey": "main", "message": "copy"})
            await until("the model's second turn", lambda: len(fake.requests) >= 2)
        result = next(m for m in fake.requests[1].messages if m["role"] == "toolResult")
        assert '"bytesTransferred": 5' in result["content"][0]["text"]
        assert (workspace_of(gw) / "notes.txt").read_text() == "hello"


async def test_a_slow_destination_slows_a_send_from_the_workspace_and_gets_every_byte(
    gw: RunningGateway,
) -> None:
    """Workspace -> node into a destination that reads nothing for a while: the gateway
    queues at most its high-water mark, then resumes as the destination drains, and the
    file arrives whole (the queue's byte count must fall as queued frames are written)."""
    data = os.urandom(24 * 1024 * 1024)
    folder = workspace_of(gw)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "big.bin").write_bytes(data)
    received = bytearray()
    done = asyncio.Event()
    async with await open_raw(gw.url, max_size=None) as ws:
        await handshake(ws, mode="node", client_id="b", tools=[{"name": "Write"}])

        async def slow_node() -> None:
            async for raw in ws:
                if isinstance(raw, bytes):
                    received.extend(raw[4:])
                    continue
                frame = json.loads(raw)
                payload = frame.get("payload") or {}
                if frame.get("event") == "transfer.receive":
                    reply = {"transferId": payload["transferId"]}
                    await ws.send(json.dumps({"type": "req", "id": "acc",
                                              "method": "transfer.accept", "params": reply}))  # fmt: skip
                    ws.transport.pause_reading()  # the gateway's sends back up
                    await asyncio.sleep(1.0)
                    ws.transport.resume_reading()
                elif frame.get("event") == "transfer.end":
                    reply = {"transferId": payload["transferId"], "bytesWritten": len(received),
                             "sha256": hashlib.sha256(received).hexdigest()}  # fmt: skip
                    await ws.send(json.dumps({"type": "req", "id": "done",
                                              "method": "transfer.done", "params": reply}))  # fmt: skip
                    done.set()

        reader = asyncio.create_task(slow_node())
        try:
            result = await asyncio.wait_for(transfer(gw, "gsv:workspace/big.bin", "b:big.bin"), 60)
        finally:
            reader.cancel()
    assert done.is_set() and bytes(received) == data
    assert result["bytesTransferred"] == len(data)
    assert result["sha256"] == hashlib.sha256(data).hexdigest()
