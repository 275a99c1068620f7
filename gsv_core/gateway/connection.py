"""One WebSocket peer: a reader loop, one writer queue, one task per request.

The reader (`rpc.websocket.dispatch_messages`) hands each message to `_on_message` in
order. `connect` is handled before the next message is read (later frames must see the
handshake done); every other request runs in its own task, so a slow method never blocks
the others; a binary frame is awaited, so a slow destination slows this socket. Frames
go out through one queue drained by one writer task, which keeps them whole and
ordered. When the socket closes or the writer fails, request tasks are cancelled and the
peer leaves the registry.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode

from gsv_core.errors import ConnectionClosed as ConnectionClosedError
from gsv_core.errors import InvalidConnectParams
from gsv_core.errors import InvalidParams
from gsv_core.gateway.http_front import FrontDoorConnection
from gsv_core.gateway.peer_address import describe
from gsv_core.gateway.peer_address import host_of
from gsv_core.protocol.frames import EncodedEvent
from gsv_core.protocol.frames import FrameError
from gsv_core.protocol.frames import RequestFrame
from gsv_core.protocol.frames import encode_error
from gsv_core.protocol.frames import encode_event
from gsv_core.protocol.frames import parse_frame
from gsv_core.protocol.methods import CONNECT
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.websocket import close_reading
from gsv_core.rpc.websocket import dispatch_messages

if TYPE_CHECKING:
    from gsv_core.gateway.keepalive import Keepalive
    from gsv_core.gateway.state import Gateway

log = logging.getLogger(__name__)

BINARY_HIGH_WATER = 4 * 1024 * 1024
BINARY_LOW_WATER = 1024 * 1024


@dataclass(frozen=True)
class _Close:
    code: int
    reason: str


class Connection:
    """A connected peer (implements `gsv_core.rpc.context.Peer`)."""

    def __init__(
        self,
        ws: ServerConnection,
        gateway: Gateway,
        browser: str | None = None,
        keepalive: Keepalive | None = None,
    ) -> None:
        self._ws = ws
        self._gateway = gateway
        self._keepalive = keepalive
        # when the peer last sent a message: the keepalive pings only peers silent a while
        self._heard = time.monotonic()
        # when writing the frame now being written began (None: nothing is waiting)
        self._sending_since: float | None = None
        self._silent: str | None = None  # why the keepalive dropped it, once it has
        self.connection_id = str(uuid.uuid4())
        self.connected = False
        self.mode: str | None = None
        self.peer_id: str | None = None
        # the socket's other end: "host:port" for logs, the host to count wrong codes by
        self.remote = describe(ws.remote_address)
        self.host = host_of(ws.remote_address)
        # a browser's web credential: the upgrade's cookie, when its Origin was allowed
        # (`WebFront.browser_credential`, docs/web.md)
        self.browser = browser
        self.credential_id: str | None = None  # set by `connect` when one was used
        self.sign_in_ends: int | None = None  # set by `connect` for a browser's credential
        self.watching: frozenset[str] | None = None  # set by `chat.subscribe`; None: all
        self._seq = 0
        self._outbox: asyncio.Queue[str | bytes | memoryview | _Close] = asyncio.Queue()
        # binary frames queued but not yet written: senders wait above the high-water mark,
        # so a slow peer slows the transfer instead of filling the gateway's memory
        self._queued_bytes = 0
        self._drained = asyncio.Event()
        self._drained.set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._reader: asyncio.Task[None] | None = None
        self._closing = False

    # -- Peer -------------------------------------------------------------------------
    def send_event(self, event: str, payload: Any = None) -> None:
        self._seq += 1
        self._send(encode_event(event, payload, self._seq))

    def send_encoded(self, event: EncodedEvent) -> None:
        self._seq += 1
        self._send(event.frame(self._seq))

    async def send_binary(self, data: bytes | memoryview) -> None:
        while self._queued_bytes > BINARY_HIGH_WATER and not self._closing:
            self._drained.clear()
            await self._drained.wait()
        if self._closing:
            raise ConnectionClosedError("the connection is closing")
        self._queued_bytes += len(data)
        self._outbox.put_nowait(data)

    async def alive(self, timeout: float) -> bool:
        """Whether the other end answers a ping within `timeout` seconds (a node that
        reconnects while its old socket is silent: is the old one dead or in use?)."""
        try:
            pong = await self._ws.ping()
            async with asyncio.timeout(timeout):
                await pong
        except (TimeoutError, ConnectionClosed):
            return False
        return True

    # -- Watched (the keepalive) ------------------------------------------------------
    @property
    def heard(self) -> float:
        """When the peer last sent anything: a message, or (through the front door,
        which sees every byte) a pong or a ping of its own."""
        wire = self._ws.heard if isinstance(self._ws, FrontDoorConnection) else 0.0
        heard = max(self._heard, wire)
        # while a frame waits for the peer to read it, what it sends meanwhile does not
        # count: a peer that talks but stops reading is pinged, and dropped
        if self._sending_since is not None:
            return min(heard, self._sending_since)
        return heard

    @heard.setter
    def heard(self, when: float) -> None:
        self._heard = when

    async def ping(self) -> Awaitable[float]:
        return await self._ws.ping()

    def lost(self, reason: str) -> None:
        """No pong in time: the peer is gone for us now. Its reader stops at once, so it
        leaves the registry (calls failed, tools withdrawn) before the socket is closed;
        nothing queued is written to a peer that stopped reading."""
        if self._silent is None:
            self._silent = reason
            self._closing = True
            if self._reader is not None:
                self._reader.cancel()

    def close(self, code: int = CloseCode.NORMAL_CLOSURE, reason: str = "") -> None:
        """Close after everything already queued has been written."""
        if not self._closing:
            self._closing = True
            self._outbox.put_nowait(_Close(code, reason))

    # -- writing ----------------------------------------------------------------------
    def _send(self, data: str) -> None:
        if not self._closing:
            self._outbox.put_nowait(data)

    async def _write_loop(self) -> None:
        try:
            while True:
                item = await self._outbox.get()
                if isinstance(item, _Close):
                    self._drained.set()  # wake blocked senders: they will see the close
                    await close_reading(self._ws, self._reader, item.code, item.reason)
                    return
                self._sending_since = time.monotonic()
                await self._ws.send(item)
                self._sending_since = None
                if not isinstance(item, str):  # a binary frame: bytes or a view of a buffer
                    self._queued_bytes -= len(item)
                    if self._queued_bytes <= BINARY_LOW_WATER:
                        self._drained.set()
                # not held while we wait for the next one: an idle peer would keep the
                # last frame written to it (a node: its hello-ok) for ever
                del item
        except ConnectionClosed:
            return

    # -- reading ----------------------------------------------------------------------
    async def run(self) -> None:
        log.debug("connection %s opened from %s", self.connection_id, self.remote)
        writer = asyncio.create_task(self._write_loop(), name=f"gsv-writer-{self.connection_id}")
        reader = self._reader = asyncio.create_task(
            dispatch_messages(self._ws, self._on_message), name=f"gsv-reader-{self.connection_id}"
        )
        if self._keepalive is not None:
            self._keepalive.watch(self)
        try:
            await asyncio.wait({reader, writer}, return_when=asyncio.FIRST_COMPLETED)
            if self._closing and self._silent is None and not writer.done():
                # our close cancelled the reader: let the writer finish the handshake
                # (websockets bounds it with its close_timeout)
                await asyncio.wait({writer})
        finally:
            if self._keepalive is not None:
                self._keepalive.forget(self)
            self._closing = True
            self._drained.set()  # senders waiting for room give up now
            for task in (reader, writer, *self._tasks):
                task.cancel()
            await asyncio.gather(reader, writer, *self._tasks, return_exceptions=True)
            if self._ws.close_code == CloseCode.MESSAGE_TOO_BIG:
                log.warning("connection %s: frame too large, closed", self.connection_id)
            await self._gateway.on_disconnect(self)
            if self._silent is not None:
                await self._close_silent(self._silent)
            log.debug("connection %s closed (%s %s)", self.connection_id, self.mode, self.peer_id)

    async def _close_silent(self, reason: str) -> None:
        """Close a peer that stopped answering: it will not answer our close frame
        either, so websockets gives up after its close_timeout; the bound here guards a
        socket whose buffer is full (writing the close frame would wait): once it is
        spent, websockets closes the socket as the handler returns."""
        log.info("connection %s (%s %s): %s, closed", self.connection_id, self.mode,
                 self.peer_id, reason)  # fmt: skip
        with contextlib.suppress(TimeoutError, ConnectionClosed):
            async with asyncio.timeout(self._keepalive.close_timeout if self._keepalive else 0):
                await self._ws.close(CloseCode.INTERNAL_ERROR, reason)

    def _on_message(self, message: str | bytes) -> Awaitable[None] | None:
        self._heard = time.monotonic()
        if isinstance(message, bytes):
            # awaited: while the destination is slow we stop reading this socket
            return self._gateway.on_binary(self, message)
        return self._on_text(message)

    def _on_text(self, message: str) -> Awaitable[None] | None:
        try:
            frame = parse_frame(message)
        except FrameError as exc:
            log.warning("connection %s: bad frame: %s", self.connection_id, exc)
            if exc.reply_id is not None:
                # connect's shape errors are 103 (docs/protocol.md#connect), every other
                # method's 400
                error = InvalidConnectParams if exc.method == CONNECT else InvalidParams
                self._send(encode_error(exc.reply_id, error(str(exc))))
            elif exc.close_code is not None:
                self.close(exc.close_code, str(exc)[:120])
            return None
        if not isinstance(frame, RequestFrame):
            log.debug("connection %s: ignoring %s frame", self.connection_id, type(frame).__name__)
            return None
        if frame.method == CONNECT:
            return self._handle(frame)  # later frames wait: they must see the handshake done
        task = asyncio.create_task(self._handle(frame))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return None

    async def _handle(self, frame: RequestFrame) -> None:
        ctx = RequestContext(peer=self, frame_id=frame.id)
        self._send(await self._gateway.router.handle(ctx, frame.method, frame.params))
        if ctx.close_after_reply is not None:
            self.close(*ctx.close_after_reply)
