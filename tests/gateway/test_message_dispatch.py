"""rpc/websocket.py: messages handed to one handler as they are parsed, in order, whole,
with backpressure; frames written at once. A real websockets server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from gsv_core.rpc.websocket import DispatchingServerConnection

Handler = Callable[[str | bytes], Awaitable[None] | None]


@asynccontextmanager
async def server(
    make_handler: Callable[[DispatchingServerConnection], Handler],
    before_dispatch: asyncio.Event | None = None,
) -> AsyncIterator[tuple[str, list[DispatchingServerConnection]]]:
    """A server whose connections hand messages to `make_handler(conn)`."""
    conns: list[DispatchingServerConnection] = []

    async def serve_one(ws: ServerConnection) -> None:
        assert isinstance(ws, DispatchingServerConnection)
        conns.append(ws)
        if before_dispatch is not None:
            await before_dispatch.wait()
        ws.dispatch_to(make_handler(ws))
        await ws.dispatch_done()

    async with serve(
        serve_one, "127.0.0.1", 0, compression=None, create_connection=DispatchingServerConnection
    ) as running:
        port = next(iter(running.sockets)).getsockname()[1]
        yield f"ws://127.0.0.1:{port}/", conns


def client(url: str) -> Any:
    return connect(url, compression=None, proxy=None, max_size=None)


async def until(check: Callable[[], bool]) -> None:
    async with asyncio.timeout(5):
        while not check():
            await asyncio.sleep(0.005)


async def test_messages_arrive_in_order_whole_and_typed() -> None:
    """Text comes as str, binary as bytes, fragmented messages once and whole, in order."""
    got: list[str | bytes] = []
    async with server(lambda conn: got.append) as (url, _), client(url) as ws:
        await ws.send("one")
        await ws.send(b"\x00two")
        await ws.send(["thr", "ee"])  # one text message in two frames
        await ws.send([b"fo", b"ur"])
        await ws.send("five")
        await until(lambda: len(got) == 5)
    assert got == ["one", b"\x00two", "three", b"four", "five"]


async def test_invalid_utf8_fails_the_connection_with_1007() -> None:
    """A text frame that is not UTF-8 never reaches the handler; the socket closes 1007."""
    got: list[str | bytes] = []
    async with server(lambda conn: got.append) as (url, _), client(url) as ws:
        await ws.send(b"\xff\xfe", text=True)
        with pytest.raises(ConnectionClosed) as closed:
            async with asyncio.timeout(5):
                await ws.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1007
    assert got == []


async def test_a_handler_still_at_work_holds_back_the_messages_after_it() -> None:
    """While the first message's awaitable is pending, later ones wait; then they follow
    in order (a `connect` is done before the next request is read)."""
    release = asyncio.Event()
    handled: list[str] = []

    def make(conn: DispatchingServerConnection) -> Handler:
        def handle(message: str | bytes) -> Awaitable[None] | None:
            assert isinstance(message, str)
            if message == "slow":

                async def slow() -> None:
                    await release.wait()
                    handled.append(message)

                return slow()
            handled.append(message)
            return None

        return handle

    async with server(make) as (url, conns), client(url) as ws:
        for message in ("slow", "a", "b", "c"):
            await ws.send(message)
        await until(lambda: len(conns) == 1 and len(conns[0]._backlog) == 3)
        assert handled == []
        release.set()
        await until(lambda: len(handled) == 4)
    assert handled == ["slow", "a", "b", "c"]


async def test_messages_before_dispatch_starts_are_handed_over_in_order() -> None:
    """What arrives before dispatch_to() waits for it, then comes first."""
    ready = asyncio.Event()
    got: list[str | bytes] = []
    async with server(lambda conn: got.append, ready) as (url, conns), client(url) as ws:
        for i in range(5):
            await ws.send(f"early {i}")
        await until(lambda: len(conns) == 1 and len(conns[0]._backlog) == 5)
        ready.set()
        await ws.send("late")
        await until(lambda: len(got) == 6)
    assert got == [*(f"early {i}" for i in range(5)), "late"]


async def test_a_slow_consumer_pauses_reading_instead_of_buffering_everything() -> None:
    """200 binary messages of 256 KiB behind a pending handler: the server holds a bounded
    backlog (reading is paused), and after release all arrive whole and in order."""
    release = asyncio.Event()
    sizes: list[int] = []
    firsts: list[int] = []

    def make(conn: DispatchingServerConnection) -> Handler:
        def handle(message: str | bytes) -> Awaitable[None] | None:
            assert isinstance(message, bytes)
            sizes.append(len(message))
            firsts.append(message[0])
            if len(sizes) == 1:
                return release.wait()  # type: ignore[return-value]
            return None

        return handle

    chunk = 256 * 1024
    async with server(make) as (url, conns), client(url) as ws:

        async def send_all() -> None:
            for i in range(200):
                await ws.send(bytes([i % 256]) * chunk)

        sender = asyncio.create_task(send_all())
        # with reading paused the sender can never finish before the release; were it
        # not, 50 MB over loopback would be read into the backlog well within this wait
        done, _ = await asyncio.wait({sender}, timeout=3)
        assert not done
        held = len(conns[0]._backlog)
        release.set()
        await sender
        await until(lambda: len(sizes) == 200)
    # what one read had already taken in when reading paused, not the 199 messages sent
    assert held <= 4
    assert sizes == [chunk] * 200
    assert firsts == [i % 256 for i in range(200)]


async def test_a_handler_that_raises_does_not_stop_the_next_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """One bad message is logged; the socket keeps serving."""
    got: list[str | bytes] = []

    def handle(message: str | bytes) -> None:
        if message == "boom":
            raise RuntimeError("boom")
        got.append(message)

    with caplog.at_level(logging.ERROR, logger="gsv_core.rpc.websocket"):
        async with server(lambda conn: handle) as (url, _), client(url) as ws:
            await ws.send("boom")
            await ws.send("after")
            await until(lambda: got == ["after"])
    assert "message handler failed" in caplog.text


async def test_write_now_reaches_the_peer_and_refuses_once_closed() -> None:
    """write_now() sends at once while open; after close it writes nothing, returns False."""
    conns_seen: list[DispatchingServerConnection] = []

    def make(conn: DispatchingServerConnection) -> Handler:
        conns_seen.append(conn)
        return lambda message: None

    async with server(make) as (url, _):
        ws: ClientConnection
        async with client(url) as ws:
            await ws.send("hello")
            await until(lambda: len(conns_seen) == 1)
            conn = conns_seen[0]
            assert conn.write_now("pushed") is True
            assert conn.write_now(b"bytes") is True
            assert await ws.recv() == "pushed"
            assert await ws.recv() == b"bytes"
        await conn.wait_closed()
        assert conn.write_now("too late") is False


async def test_stop_dispatch_cancels_the_handler_at_work_and_drops_held_messages() -> None:
    """stop_dispatch(): the pending awaitable is cancelled, held messages never run."""
    cancelled = asyncio.Event()
    handled: list[str | bytes] = []

    def make(conn: DispatchingServerConnection) -> Handler:
        def handle(message: str | bytes) -> Awaitable[None] | None:
            handled.append(message)
            if message == "stuck":

                async def stuck() -> None:
                    try:
                        await asyncio.Event().wait()
                    except asyncio.CancelledError:
                        cancelled.set()
                        raise

                return stuck()
            return None

        return handle

    async with server(make) as (url, conns), client(url) as ws:
        await ws.send("stuck")
        await ws.send("held")
        await until(lambda: len(conns) == 1 and len(conns[0]._backlog) == 1)
        conns[0].stop_dispatch()
        async with asyncio.timeout(5):
            await cancelled.wait()
        assert not conns[0]._backlog
    assert handled == ["stuck"]
