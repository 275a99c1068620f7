"""rpc/websocket.py against real sockets: a websockets server on 127.0.0.1 port 0 whose
connections are DispatchingServerConnection, and real websockets clients."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosedError
from websockets.protocol import State

from gsv_core.rpc.websocket import (
    BACKLOG_HIGH,
    DispatchingClientConnection,
    DispatchingServerConnection,
    MessageHandler,
    _MaskKeys,
)

READY = "ready"  # written by the server right after dispatch_to()


@dataclass
class Served:
    url: str = ""
    conns: list[DispatchingServerConnection] = field(default_factory=list)
    done: list[asyncio.Task[None]] = field(default_factory=list)  # dispatch_done() per conn


@asynccontextmanager
async def serving(
    handle: MessageHandler, gate: asyncio.Event | None = None
) -> AsyncIterator[Served]:
    """A server handing every message to `handle`; dispatch_to() waits for `gate` if given."""
    served = Served()

    async def serve_one(ws: ServerConnection) -> None:
        assert isinstance(ws, DispatchingServerConnection)
        served.conns.append(ws)
        served.done.append(asyncio.create_task(ws.dispatch_done()))
        if gate is not None:
            await gate.wait()
        ws.dispatch_to(handle)
        ws.write_now(READY)
        await ws.wait_closed()

    async with serve(
        serve_one, "127.0.0.1", 0, create_connection=DispatchingServerConnection, compression=None
    ) as server:
        served.url = f"ws://127.0.0.1:{next(iter(server.sockets)).getsockname()[1]}/"
        try:
            yield served
        finally:  # a test that failed half-way must not hang the server's shutdown
            if gate is not None:
                gate.set()
            for conn in served.conns:
                conn.transport.abort()
            for task in served.done:
                task.cancel()


def raw_client(url: str, **kwargs: Any) -> Any:
    return connect(url, proxy=None, compression=None, max_size=None, **kwargs)


async def until(check: Callable[[], object]) -> None:
    """Wait for `check()` to hold; the bound only turns a hang into a failure."""
    async with asyncio.timeout(5):
        while not check():
            await asyncio.sleep(0.005)


def held_until(event: asyncio.Event, log: list[str | bytes], item: str | bytes) -> Awaitable[None]:
    """An awaitable that records `item` in `log` once `event` is set."""

    async def work() -> None:
        await event.wait()
        log.append(item)

    return work()


async def test_messages_reach_the_handler_in_arrival_order_typed_by_opcode() -> None:
    """Text frames arrive as str and binary frames as bytes, in the order sent."""
    got: list[str | bytes] = []
    async with serving(got.append) as served, raw_client(served.url) as ws:
        assert await ws.recv() == READY
        for message in ("one", b"\x00two", "", b"", "caf\u00e9", b"\xff"):
            await ws.send(message)
        await until(lambda: len(got) == 6)
    assert got == ["one", b"\x00two", "", b"", "caf\u00e9", b"\xff"]


async def test_a_fragmented_message_arrives_once_and_whole() -> None:
    """Text and binary fragments are joined; UTF-8 split across frames decodes whole."""
    got: list[str | bytes] = []
    async with serving(got.append) as served, raw_client(served.url) as ws:
        assert await ws.recv() == READY
        await ws.send(["ab", "cd", "ef"])
        await ws.send([b"\x01", b"\x02\x03", b""])
        await ws.send([b"caf\xc3", b"\xa9"], text=True)  # one character in two frames
        await ws.send("after")
        await until(lambda: len(got) == 4)
    assert got == ["abcdef", b"\x01\x02\x03", "caf\u00e9", "after"]


async def test_invalid_utf8_in_a_text_frame_closes_1007_unseen_by_the_handler() -> None:
    """Invalid UTF-8 in a text frame closes 1007; the handler sees neither it nor what follows."""
    got: list[str | bytes] = []
    async with serving(got.append) as served, raw_client(served.url) as ws:
        assert await ws.recv() == READY
        await ws.send("before")
        await ws.send(b"\xff\xfe", text=True)
        await ws.send("after")
        with pytest.raises(ConnectionClosedError) as closed:
            async with asyncio.timeout(5):
                await ws.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1007
    assert got == ["before"]


async def test_a_handler_at_work_holds_back_the_messages_after_it() -> None:
    """Later messages wait while the first one's awaitable is pending, then follow in order."""
    release = asyncio.Event()
    started: list[str | bytes] = []
    handled: list[str | bytes] = []

    def handle(message: str | bytes) -> Awaitable[None] | None:
        started.append(message)
        if message == "slow":
            return held_until(release, handled, message)
        handled.append(message)
        return None

    async with serving(handle) as served, raw_client(served.url) as ws:
        assert await ws.recv() == READY
        for message in ("slow", "a", "b", "c"):
            await ws.send(message)  # no await suspends here: the server reads them at once
        conn = served.conns[0]
        await until(lambda: len(conn._backlog) == 3)
        assert started == ["slow"] and handled == []
        release.set()
        await until(lambda: len(handled) == 4)
    assert handled == ["slow", "a", "b", "c"]


async def test_messages_before_dispatch_to_are_handed_over_in_order_once_it_is_called() -> None:
    """Messages before dispatch_to() wait (reading paused past BACKLOG_HIGH), then come first."""
    gate = asyncio.Event()
    got: list[str | bytes] = []
    early = [f"early {i}" for i in range(BACKLOG_HIGH + 36)]
    async with serving(got.append, gate) as served, raw_client(served.url) as ws:
        for message in early:
            await ws.send(message)
        await until(lambda: served.conns and len(served.conns[0]._backlog) > BACKLOG_HIGH)
        assert not served.conns[0].transport.is_reading()
        assert got == []
        gate.set()
        assert await ws.recv() == READY
        await ws.send("late")
        await until(lambda: len(got) == len(early) + 1)
    assert got == [*early, "late"]


def blob(i: int) -> bytes:
    return i.to_bytes(2, "big") * (128 * 1024)  # 256 KiB, different for every message


async def test_a_pending_handler_pauses_reading_so_the_backlog_stays_bounded() -> None:
    """A pending handler pauses reading: the backlog stays bounded, then all arrive in order."""
    release = asyncio.Event()
    intact: list[bool] = []

    def handle(message: str | bytes) -> Awaitable[None] | None:
        intact.append(message == blob(len(intact)))
        if len(intact) == 1:
            return held_until(release, [], message)
        return None

    async with serving(handle) as served, raw_client(served.url) as ws:
        assert await ws.recv() == READY

        async def send_all() -> None:
            for i in range(200):
                await ws.send(blob(i))

        sender = asyncio.create_task(send_all())
        conn = served.conns[0]
        # the sender is held back: the server does not read, the client's buffer fills
        await until(
            lambda: (
                intact
                and not conn.transport.is_reading()
                and ws.transport.get_write_buffer_size() > 0
            )
        )
        # Reading paused as the first handler returned its awaitable: only frames parsed
        # from that same read are held, and a read (<= 256 KiB in asyncio) completes at most
        # one more 256 KiB frame. BACKLOG_HIGH on top allows pausing at the high-water mark.
        assert len(conn._backlog) <= BACKLOG_HIGH + 2
        assert not sender.done()  # 50 MiB cannot fit in the loopback socket buffers
        release.set()
        async with asyncio.timeout(30):
            await sender
        await until(lambda: len(intact) == 200)
    assert intact == [True] * 200


async def test_a_handler_that_raises_is_logged_and_the_next_message_is_handled(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A handler, or its awaitable, that raises is logged; the next message is still handled."""
    handled: list[str | bytes] = []

    async def fail_later() -> None:
        raise RuntimeError("awaitable failed")

    def handle(message: str | bytes) -> Awaitable[None] | None:
        if message == "raise":
            raise RuntimeError("handler failed")
        if message == "raise later":
            return fail_later()
        handled.append(message)
        return None

    with caplog.at_level(logging.ERROR, logger="gsv_core.rpc.websocket"):
        async with serving(handle) as served, raw_client(served.url) as ws:
            assert await ws.recv() == READY
            for message in ("raise", "one", "raise later", "two"):
                await ws.send(message)
            await until(lambda: len(handled) == 2)
            assert served.conns[0].state is State.OPEN
    assert handled == ["one", "two"]
    logged = [str(r.exc_info[1]) for r in caplog.records if r.exc_info]
    assert logged == ["handler failed", "awaitable failed"]
    assert {r.getMessage() for r in caplog.records} == {"message handler failed"}


async def test_write_now_writes_a_frame_and_returns_false_once_closed() -> None:
    """write_now() writes a frame the peer receives, and returns False once closed."""
    at_server: list[str | bytes] = []
    at_client: list[str | bytes] = []
    async with serving(at_server.append) as served:
        async with raw_client(served.url, create_connection=DispatchingClientConnection) as ws:
            assert isinstance(ws, DispatchingClientConnection)
            ws.dispatch_to(at_client.append)
            await until(lambda: at_client == [READY])
            conn = served.conns[0]
            assert conn.write_now("pushed") is True
            assert conn.write_now(b"\x00bin") is True
            assert ws.write_now("from the client") is True
            await until(lambda: len(at_client) == 3 and at_server)
        await conn.wait_closed()
        assert conn.write_now("late") is False
        assert ws.write_now(b"late") is False
    assert at_client == [READY, "pushed", b"\x00bin"]
    assert at_server == ["from the client"]


async def test_dispatch_done_returns_once_the_peer_closed_and_every_message_was_handled() -> None:
    """dispatch_done() returns only once the peer closed and every held message was handled."""
    gate, release = asyncio.Event(), asyncio.Event()
    handled: list[str | bytes] = []

    def handle(message: str | bytes) -> Awaitable[None] | None:
        if message == "slow":
            return held_until(release, handled, message)
        handled.append(message)
        return None

    async with serving(handle, gate) as served:
        async with raw_client(served.url) as ws:
            for message in ("slow", "a", "b"):
                await ws.send(message)
            await until(lambda: served.conns and len(served.conns[0]._backlog) == 3)
            done = served.done[0]
            assert not done.done()  # open: not done, though nothing is at work
        conn = served.conns[0]
        await conn.wait_closed()
        gate.set()  # dispatch_to() now: "slow" starts and holds "a" and "b" back
        await until(lambda: len(conn._backlog) == 2)
        assert not done.done()
        release.set()
        async with asyncio.timeout(5):
            await done
        assert handled == ["slow", "a", "b"]


async def test_stop_dispatch_cancels_the_awaitable_at_work_and_drops_held_messages() -> None:
    """stop_dispatch() cancels the awaitable at work and drops the messages held back."""
    started, cancelled = asyncio.Event(), asyncio.Event()
    handled: list[str | bytes] = []

    async def stuck() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    def handle(message: str | bytes) -> Awaitable[None] | None:
        handled.append(message)
        return stuck() if message == "stuck" else None

    async with serving(handle) as served:
        async with raw_client(served.url) as ws:
            assert await ws.recv() == READY
            for message in ("stuck", "a", "b"):
                await ws.send(message)
            conn = served.conns[0]
            await until(lambda: started.is_set() and len(conn._backlog) == 2)
            conn.stop_dispatch()
            async with asyncio.timeout(5):
                await cancelled.wait()
            assert not conn._backlog
        async with asyncio.timeout(5):
            await served.done[0]
    assert handled == ["stuck"]


async def test_stop_dispatch_right_after_a_handler_returned_still_cancels_it() -> None:
    """stop_dispatch() in the turn the awaitable was handed back still cancels it; close works."""
    work: list[asyncio.Future[None]] = []

    def handle(message: str | bytes) -> Awaitable[None] | None:
        if message != "work":
            return None
        loop = asyncio.get_running_loop()
        loop.call_soon(served.conns[0].stop_dispatch)  # runs before the drain task starts
        work.append(loop.create_future())
        return work[0]

    async with serving(handle) as served:
        ws = await raw_client(served.url, close_timeout=None)
        try:
            assert await ws.recv() == READY
            await ws.send("work")
            await until(lambda: work and work[0].cancelled())
            async with asyncio.timeout(5):
                await ws.close()
                await served.done[0]
        finally:
            ws.transport.abort()


async def test_close_while_a_handler_is_at_work_completes_the_handshake() -> None:
    """Closing the side whose handler is at work still gets the peer's close frame."""
    got: list[str | bytes] = []

    def hold(message: str | bytes) -> Awaitable[None] | None:
        got.append(message)
        if message == b"data":
            return asyncio.get_running_loop().create_future()  # never done
        return None

    def reply(message: str | bytes) -> None:
        served.conns[0].write_now(b"data")

    async with serving(reply) as served:
        ws = await raw_client(
            served.url, create_connection=DispatchingClientConnection, close_timeout=None
        )
        assert isinstance(ws, DispatchingClientConnection)
        try:
            ws.dispatch_to(hold)
            await until(lambda: got == [READY])  # handed over directly from now on
            await ws.send("push")  # the server answers b"data"
            await until(lambda: got == [READY, b"data"])
            async with asyncio.timeout(5):
                await ws.close()
            assert ws.close_code == 1000
        finally:
            ws.stop_dispatch()
            ws.transport.abort()


FRAME_SIZES = [0, 1, 125, 126, 127, 65535, 65536, 256 * 1024 + 4]


async def test_frames_written_by_hand_reach_a_plain_peer_intact() -> None:
    """write_now() writes frames itself (header and payload, masked from a client): a
    plain websockets peer reads every length class, as text and as binary from bytes,
    bytearray and memoryview."""
    binary = [bytes((i * 7 + n) % 256 for i in range(n)) for n in FRAME_SIZES]
    text = [
        "".join(chr(0x61 + (i + n) % 26) for i in range(n - 2)) + "\u00e9" for n in FRAME_SIZES[1:]
    ]
    payloads: list[str | bytes] = [*binary, *text]
    at_server: list[str | bytes] = []
    at_client: list[str | bytes] = []
    async with (
        serving(at_server.append) as served,
        raw_client(served.url, create_connection=DispatchingClientConnection) as ws,
    ):
        assert isinstance(ws, DispatchingClientConnection)
        ws.dispatch_to(at_client.append)
        await until(lambda: at_client == [READY])
        for data in payloads:  # client -> server: masked
            await until(lambda: not ws.paused)  # write_now() writes only when not paused
            if isinstance(data, str):
                assert ws.write_now(data)
                continue
            buffer = bytearray(data)
            assert ws.write_now(memoryview(buffer))
            buffer[:] = b"\xee" * len(buffer)  # masking copied it: reuse cannot leak
        conn = served.conns[0]
        for data in payloads:  # server -> client: plain
            await until(lambda: not conn.paused)
            assert conn.write_now(data)
        await until(lambda: len(at_server) == len(payloads) == len(at_client) - 1)
        assert conn.state is State.OPEN and ws.state is State.OPEN
    assert at_server == payloads
    assert at_client[1:] == payloads


def test_client_mask_keys_are_cut_from_a_random_pool_and_refilled() -> None:
    """A client's masks come four bytes at a time from one os.urandom pool, refilled
    when it runs out; no key repeats a neighbour (the pool is random, not a counter)."""
    keys = _MaskKeys(pool_size=12)
    taken = [keys.take() for _ in range(30)]  # ten refills
    assert all(isinstance(key, bytes) and len(key) == 4 for key in taken)
    assert len(set(taken)) > 25  # 30 random 32-bit keys: a collision is ~1e-7 likely
