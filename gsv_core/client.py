"""GatewayClient: one WebSocket connection to a gateway, used by the CLI, the TUI, nodes
and channel processes.

    async with GatewayClient(url, token=token) as client:
        payload = await client.call("config.get", {"path": "model"})
        async for event in client.events(): ...

`call()` returns the payload or raises the GsvError subclass the handler raised (rebuilt
from the ErrorShape). With `reconnect=True` a lost connection is re-established with
jittered exponential backoff, the handshake is repeated (so a node re-registers its
tools), and calls made meanwhile wait for it within their timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import math
import os
import platform
import random
import socket
import ssl
import time
import uuid
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed as WsConnectionClosed
from websockets.exceptions import InvalidHandshake
from websockets.exceptions import InvalidURI

from gsv_core import __version__
from gsv_core.defaults import DEFAULT_GATEWAY_URL
from gsv_core.defaults import MAX_MESSAGE_BYTES
from gsv_core.errors import ConnectionClosed
from gsv_core.errors import GatewayUnreachable
from gsv_core.errors import GsvError
from gsv_core.errors import InvalidParams
from gsv_core.errors import TimedOut
from gsv_core.errors import error_from_shape
from gsv_core.protocol import PROTOCOL_VERSION
from gsv_core.protocol.frames import WRITE_LIMIT
from gsv_core.protocol.frames import EventFrame
from gsv_core.protocol.frames import FrameError
from gsv_core.protocol.frames import ResponseFrame
from gsv_core.protocol.frames import encode_request
from gsv_core.protocol.frames import parse_frame
from gsv_core.protocol.methods import CLIENT
from gsv_core.protocol.methods import CONNECT
from gsv_core.rpc.websocket import close_reading
from gsv_core.rpc.websocket import dispatch_messages

log = logging.getLogger(__name__)

DEFAULT_URL = DEFAULT_GATEWAY_URL
DEFAULT_MAX_SIZE = MAX_MESSAGE_BYTES


@dataclass
class Backoff:
    """Jittered exponential backoff: attempt n waits uniform(0.5, 1) * min(cap, base * 2^n)."""

    base: float = 0.5
    cap: float = 30.0
    rng: random.Random = field(default_factory=random.Random)
    attempt: int = 0

    def next_delay(self) -> float:
        delay = min(self.cap, self.base * 2.0 ** min(self.attempt, 30))
        self.attempt += 1
        return delay * self.rng.uniform(0.5, 1.0)

    def reset(self) -> None:
        self.attempt = 0


def local_platform() -> str:
    system = platform.system().lower()
    return {"darwin": "macos"}.get(system, system)


@dataclass
class ClientIdentity:
    """What the client says about itself in `connect` (docs/protocol.md#connect)."""

    mode: str = CLIENT
    id: str = field(default_factory=lambda: f"client-{uuid.uuid4()}")
    version: str = __version__
    platform: str = field(default_factory=local_platform)
    channel: str | None = None
    account_id: str | None = None
    tools: list[dict[str, Any]] | None = None
    node_runtime: dict[str, Any] | None = None
    # a one-time code from `auth.invite`, sent instead of a token: a node or channel
    # adapter's first connect, which returns its own credential in hello-ok
    join_code: str | None = None

    def connect_params(self, token: str | None) -> dict[str, Any]:
        client: dict[str, Any] = {
            "id": self.id,
            "version": self.version,
            "platform": self.platform,
            "mode": self.mode,
        }
        if self.channel is not None:
            client["channel"] = self.channel
        if self.account_id is not None:
            client["accountId"] = self.account_id
        params: dict[str, Any] = {
            "minProtocol": PROTOCOL_VERSION,
            "maxProtocol": PROTOCOL_VERSION,
            "client": client,
        }
        if self.tools is not None:
            params["tools"] = self.tools
        if self.node_runtime is not None:
            params["nodeRuntime"] = self.node_runtime
        if token:
            params["auth"] = {"token": token}
        elif self.join_code:
            params["auth"] = {"joinCode": self.join_code}
        return params


_END = object()


# with a heartbeat, a link that stops carrying packets leaves its bytes unacknowledged:
# where the kernel can (Linux), it gives up on the connection after this long, so a
# partition is noticed within about heartbeat + this, not our ping's interval + timeout
UNACKED_TIMEOUT = 20.0
# whether it can: Python defines TCP_USER_TIMEOUT only where the kernel has it (Linux and
# Android; not macOS, the BSDs or Windows)
UNACKED_TIMEOUT_APPLIES = hasattr(socket, "TCP_USER_TIMEOUT")


class BeatingConnection(ClientConnection):
    """websockets' connection (its documented `create_connection` hook) with the socket
    told to fail once sent bytes go unacknowledged for UNACKED_TIMEOUT (TCP_USER_TIMEOUT)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        sock = transport.get_extra_info("socket")
        if sock is not None and UNACKED_TIMEOUT_APPLIES:
            try:
                sock.setsockopt(
                    socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, int(UNACKED_TIMEOUT * 1000)
                )
            except OSError as exc:  # a kernel that lacks it after all: only the ping is left
                log.warning("TCP_USER_TIMEOUT refused (%s): a dead network is noticed "
                            "only by the keepalive ping", exc)  # fmt: skip


# how far from its mark a beat still counts as on it: the loop sleeps on the monotonic
# clock, and NTP slews the wall clock by at most 0.5 ms a second (4 ms over 8 s); a step
# of the clock smaller than this leaves a node's beats that far off the marks
MARK_TOLERANCE = 0.05


def next_mark(after: float, every: float) -> float:
    """The first multiple of `every` seconds strictly after `after` (the wall clock).

    Beats fall on the clock's marks, not every `every` from the connect: a fleet's nodes,
    their clocks kept by NTP, beat together, and the gateway wakes once for all their
    pongs instead of once for each (timer coalescing). Waking is most of what an idle
    peer costs: at 1,000 nodes beating at their own times the gateway used 3.3% of a core
    and websockets alone 3.0%; in step, about 1% (bench/idle_nodes.py `--spread`). A clock
    set wrong only shifts a node's marks."""
    mark = (math.floor(after / every) + 1) * every
    return mark if mark > after else mark + every  # the division rounded up onto `after`


def mark_after_beat(mark: float, now: float, every: float) -> float:
    """The mark to beat on after beating for `mark`, woken at `now`: the next one when
    the beat was on time, even if the loop woke a hair before the wall clock reached
    `mark` (its sleep runs on another clock: no beat twice); else the first after `now`,
    when it woke late or the clock was stepped (no run of catch-up beats, and back on the
    marks at once instead of beating off them for ever)."""
    on_time = abs(now - mark) <= min(MARK_TOLERANCE, every / 4)
    return next_mark(mark if on_time else now, every)


def until_mark(mark: float, now: float, every: float) -> float:
    """Seconds to sleep from `now` until `mark`: never more than a period, whatever the
    wall clock did since the mark was chosen (a gap above it would get us pinged)."""
    return min(every, max(0.0, mark - now))


async def beat(ws: ClientConnection, every: float) -> None:
    """Send an unsolicited pong on every mark of `every` seconds until `ws` closes.

    RFC 6455 5.5.3 allows a pong nobody asked for as a one-way heartbeat; the gateway's
    websockets ignores it (it matches no ping) and writes nothing back, but counts it as
    hearing from us: one frame each way is saved against its ping and our pong, and a
    frame less to parse for a gateway with a thousand idle peers."""
    mark = next_mark(time.time(), every)
    while True:
        await asyncio.sleep(until_mark(mark, time.time(), every))
        try:
            await ws.pong()
        except WsConnectionClosed:  # its reader sees the close and cancels us anyway
            return
        mark = mark_after_beat(mark, time.time(), every)


class GatewayClient:
    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        token: str | None = None,
        identity: ClientIdentity | None = None,
        reconnect: bool = False,
        backoff: Backoff | None = None,
        connect_timeout: float = 15.0,
        max_size: int = DEFAULT_MAX_SIZE,
        on_binary: Callable[[bytes], Awaitable[None] | None] | None = None,
        on_connected: Callable[[dict[str, Any]], Awaitable[None]] | None = None,
        on_event: Callable[[EventFrame], None] | None = None,
        ping_interval: float = 20.0,
        heartbeat: float | None = None,
        tls_ca: str | None = None,
    ) -> None:
        self.url = url
        self.token = token
        # a wss gateway with its own certificate (no public CA): trust this PEM file
        self.tls_ca = tls_ca or os.environ.get("GSV_TLS_CA") or None
        self.identity = identity or ClientIdentity()
        self.reconnect = reconnect
        self.backoff = backoff or Backoff()
        self.connect_timeout = connect_timeout
        self.max_size = max_size
        self.on_binary = on_binary
        self.on_connected = on_connected
        # events go to `on_event` as they arrive when it is set, else to `events()`; those
        # that come before `connect()` has finished are held until then
        self.on_event = on_event
        self._events_live = False
        # keepalive: a dead connection is noticed within 2.5 * ping_interval (at most 50 s)
        self.ping_interval = ping_interval
        # an unsolicited pong every `heartbeat` seconds (None: none), so the gateway, which
        # pings only a peer it has not heard from lately, never has to ping us
        self.heartbeat = heartbeat
        self._beat: asyncio.Task[None] | None = None
        self.hello: dict[str, Any] | None = None
        self._ws: ClientConnection | None = None
        self._ids = itertools.count(1)  # frame ids need only be unique on this connection
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._events: asyncio.Queue[Any] = asyncio.Queue()
        self._up = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None
        self._reconnector: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def connected(self) -> bool:
        return self._up.is_set()

    async def __aenter__(self) -> GatewayClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- connection ---------------------------------------------------------------------
    def _tls_option(self) -> dict[str, Any]:
        """`ssl=` for connect: absent means websockets' defaults (system CAs for wss://)."""
        if not self.tls_ca or not self.url.startswith("wss://"):
            return {}
        try:
            return {"ssl": ssl.create_default_context(cafile=self.tls_ca)}
        except (OSError, ssl.SSLError) as exc:
            raise InvalidParams(f"cannot use GSV_TLS_CA {self.tls_ca}: {exc}") from exc

    async def connect(self) -> dict[str, Any]:
        """Open the socket and complete the handshake; returns the hello-ok payload."""
        self._closed = False
        try:
            ws = await connect(
                self.url,
                max_size=self.max_size,
                compression=None,
                write_limit=WRITE_LIMIT,
                proxy=None,
                **self._tls_option(),
                open_timeout=self.connect_timeout,
                ping_interval=self.ping_interval,
                ping_timeout=self.ping_interval,
                create_connection=BeatingConnection if self.heartbeat else ClientConnection,
                # a dead peer never answers our close frame either: with the defaults the
                # keepalive notices a dead link in at most 20 + 20 + 10 seconds
                close_timeout=min(10.0, self.ping_interval),
            )
        except (OSError, InvalidHandshake, TimeoutError) as exc:
            raise GatewayUnreachable(f"cannot reach the gateway at {self.url}: {exc}") from exc
        except InvalidURI as exc:
            raise InvalidParams(f"invalid gateway URL {self.url!r}: {exc}") from exc
        self._ws = ws
        self._reader = asyncio.create_task(self._watch(ws), name="gsv-client-reader")
        try:
            hello = await self._request(
                CONNECT, self.identity.connect_params(self.token), self.connect_timeout
            )
        except BaseException:
            await self._drop_socket()
            raise
        self.hello = hello
        self._up.set()
        if self.heartbeat is not None:
            self._beat = asyncio.create_task(beat(ws, self.heartbeat), name="gsv-heartbeat")
        if self.on_connected is not None:
            await self.on_connected(hello)
        self._hand_over_events()
        return dict(hello)

    async def wait_disconnected(self) -> None:
        """Return once the current connection has ended (at once if there is none)."""
        reader = self._reader
        if reader is not None and self._ws is not None:
            await asyncio.wait({reader})  # never raises, even if the reader was cancelled

    async def close(self) -> None:
        """Close for good: no reconnect, pending calls fail, events() ends."""
        self._closed = True
        if self._reconnector is not None:
            self._reconnector.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reconnector
        await self._drop_socket()
        self._events.put_nowait(_END)

    async def _drop_socket(self) -> None:
        self._up.clear()
        await self._stop_beat()
        self._events_live = False
        ws, self._ws = self._ws, None
        if ws is not None:
            await close_reading(ws, self._reader)  # cancels the reader and waits for it
        elif self._reader is not None and self._reader is not asyncio.current_task():
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        self._fail_pending()

    async def _stop_beat(self) -> None:
        beat_task, self._beat = self._beat, None
        if beat_task is not None:
            beat_task.cancel()
            await asyncio.gather(beat_task, return_exceptions=True)

    def _fail_pending(self) -> None:
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(
                    ConnectionClosed("Connection closed while waiting for response")
                )

    # -- requests -----------------------------------------------------------------------
    async def call(self, method: str, params: Any = None, timeout: float | None = 30.0) -> Any:
        """Call a method; returns its payload or raises the GsvError it failed with."""
        if self._up.is_set():  # the common case
            return await self._request(method, params, timeout)
        try:
            async with asyncio.timeout(timeout):
                if self._closed or not self.reconnect:
                    raise ConnectionClosed("not connected to the gateway")
                await self._up.wait()
                return await self._request(method, params, None)
        except TimeoutError:
            raise TimedOut(f"{method} timed out after {timeout:g}s") from None

    async def _request(self, method: str, params: Any, timeout: float | None) -> Any:
        ws = self._ws
        if ws is None:
            raise ConnectionClosed("not connected to the gateway")
        frame_id = str(next(self._ids))
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[frame_id] = future
        try:
            async with asyncio.timeout(timeout):
                await ws.send(encode_request(frame_id, method, params))
                return await future
        except TimeoutError:
            raise TimedOut(f"{method} timed out after {timeout:g}s") from None
        except WsConnectionClosed:
            raise ConnectionClosed("Connection closed while sending request") from None
        finally:
            self._pending.pop(frame_id, None)

    async def send_binary(self, data: bytes | memoryview) -> None:
        """Send a binary frame; `data` has been copied (masked) when this returns, so the
        caller may reuse its buffer."""
        ws = self._ws
        if ws is None:
            raise ConnectionClosed("not connected to the gateway")
        try:
            await ws.send(data)
        except WsConnectionClosed:
            raise ConnectionClosed("Connection closed while sending") from None

    # -- events -------------------------------------------------------------------------
    def _hand_over_events(self) -> None:
        """With `on_event`: pass on what came during the handshake, then go live."""
        if self.on_event is None:
            return
        while not self._events.empty():
            item = self._events.get_nowait()
            if isinstance(item, EventFrame):
                self.on_event(item)
        self._events_live = True

    async def events(self) -> AsyncIterator[EventFrame]:
        """Events from the gateway, across reconnects, until the client is closed."""
        while True:
            item = await self._events.get()
            if item is _END:
                self._events.put_nowait(_END)  # let other iterators end too
                return
            yield item

    # -- reader -------------------------------------------------------------------------
    def _on_message(self, message: str | bytes) -> Awaitable[None] | None:
        if isinstance(message, str):
            self._on_text(message)
            return None
        if self.on_binary is None:
            return None
        return self.on_binary(message)  # awaited before reading on: a slow writer slows reading

    async def _watch(self, ws: ClientConnection) -> None:
        """Read messages until the connection ends; then fail what waits on it and
        reconnect."""
        await dispatch_messages(ws, self._on_message)
        if self._ws is ws:
            if self._beat is not None:
                self._beat.cancel()
                self._beat = None
            self._ws = None
            self._up.clear()
            self._events_live = False
            self._fail_pending()
            if self.reconnect and not self._closed:
                self._reconnector = asyncio.create_task(self._reconnect_loop())

    def _on_text(self, message: str) -> None:
        try:
            frame = parse_frame(message)
        except FrameError as exc:
            log.warning("ignoring bad frame from gateway: %s", exc)
            return
        if isinstance(frame, ResponseFrame):
            future = self._pending.get(str(frame.id))
            if future is None or future.done():
                return
            if frame.ok:
                future.set_result(frame.payload)
            else:
                future.set_exception(error_from_shape(frame.error))
        elif isinstance(frame, EventFrame):
            if self.on_event is not None and self._events_live:
                self.on_event(frame)
            else:
                self._events.put_nowait(frame)

    async def _reconnect_loop(self) -> None:
        while not self._closed:
            delay = self.backoff.next_delay()
            log.info("connection to %s lost; reconnecting in %.1fs", self.url, delay)
            await asyncio.sleep(delay)
            try:
                await self.connect()
            except GsvError as exc:
                log.warning("reconnect to %s failed: %s", self.url, exc.message)
                continue
            self.backoff.reset()
            log.info("reconnected to %s", self.url)
            return
