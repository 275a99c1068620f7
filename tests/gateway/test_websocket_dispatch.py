"""rpc/websocket.py against real sockets: a websockets server on 127.0.0.1 port 0 whose
connections are read by `dispatch_messages`, and real websockets clients."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection
from websockets.asyncio.server import serve
from websockets.exceptions import ConnectionClosedError

from gsv_core.rpc.websocket import MessageHandler
from gsv_core.rpc.websocket import close_reading
from gsv_core.rpc.websocket import dispatch_messages
from tests.waiting import WAIT
from tests.waiting import until

READY = "ready"  # sent by the server once its connection is being read


@dataclass
class Served:
    url: str = ""
    conns: list[ServerConnection] = field(default_factory=list)
    done: list[asyncio.Task[None]] = field(default_factory=list)  # dispatch_messages() per conn


@asynccontextmanager
async def serving(
    handle: MessageHandler, gate: asyncio.Event | None = None
) -> AsyncIterator[Served]:
    """A server handing every message to `handle`; reading starts once `gate` is set."""
    served = Served()

    async def serve_one(ws: ServerConnection) -> None:
        served.conns.append(ws)
        if gate is not None:
            await gate.wait()
        reading = asyncio.create_task(dispatch_messages(ws, handle))
        served.done.append(reading)
        await ws.send(READY)
        await asyncio.wait({reading})

    async with serve(serve_one, "127.0.0.1", 0, compression=None) as server:
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


async def delivered(ws: Any) -> None:
    """Return once the server has received all this client sent before: websockets
    answers a ping as it reads it, after the frames ahead of it."""
    async with asyncio.timeout(WAIT):
        await (await ws.ping())


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
            async with asyncio.timeout(WAIT):
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
            await ws.send(message)
        await delivered(ws)
        assert started == ["slow"] and handled == []
        release.set()
        await until(lambda: len(handled) == 4)
    assert handled == ["slow", "a", "b", "c"]


async def test_messages_sent_before_reading_starts_come_first_in_order() -> None:
    """Messages that arrive before the connection is read wait (websockets stops reading
    past its queue limit), then are handed over first, in order."""
    gate = asyncio.Event()
    got: list[str | bytes] = []
    early = [f"early {i}" for i in range(50)]
    async with serving(got.append, gate) as served, raw_client(served.url) as ws:
        for message in early:
            await ws.send(message)
        await until(lambda: served.conns and not served.conns[0].transport.is_reading())
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
            assert served.conns[0].state.name == "OPEN"
    assert handled == ["one", "two"]
    logged = [str(r.exc_info[1]) for r in caplog.records if r.exc_info]
    assert logged == ["handler failed", "awaitable failed"]
    assert {r.getMessage() for r in caplog.records} == {"message handler failed"}


async def test_reading_ends_once_the_peer_closed_and_every_message_was_handled() -> None:
    """dispatch_messages() returns only once the peer closed and every message was handled."""
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
            await delivered(ws)
        conn = served.conns[0]
        await conn.wait_closed()
        gate.set()  # reading starts now: "slow" holds "a" and "b" back
        await until(lambda: served.done)
        done = served.done[0]
        await until(lambda: handled == [] and not done.done())
        release.set()
        async with asyncio.timeout(WAIT):
            await done
        assert handled == ["slow", "a", "b"]


async def test_cancelling_the_reader_cancels_the_awaitable_at_work() -> None:
    """Cancelling dispatch_messages() (the peer is gone) cancels the handler at work and
    hands over nothing after it."""
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

    async with serving(handle) as served, raw_client(served.url) as ws:
        assert await ws.recv() == READY
        for message in ("stuck", "a", "b"):
            await ws.send(message)
        await delivered(ws)
        await until(started.is_set)
        served.done[0].cancel()
        async with asyncio.timeout(WAIT):
            await cancelled.wait()
    assert handled == ["stuck"]


async def test_close_while_a_handler_is_at_work_completes_the_handshake() -> None:
    """close_reading() on the side whose handler is at work (its queue full, websockets
    no longer reading) still gets the peer's close frame."""
    got: list[str | bytes] = []

    def hold(message: str | bytes) -> Awaitable[None] | None:
        got.append(message)
        return asyncio.get_running_loop().create_future()  # never done

    async with serving(hold) as served:
        ws = await raw_client(served.url, close_timeout=None)
        try:
            assert await ws.recv() == READY
            for _ in range(40):  # more than websockets queues before it stops reading
                await ws.send("push")
            await delivered(ws)
            conn = served.conns[0]
            async with asyncio.timeout(WAIT):
                await close_reading(conn, served.done[0])
            assert conn.close_code == 1000 and got == ["push"]
        finally:
            ws.transport.abort()
