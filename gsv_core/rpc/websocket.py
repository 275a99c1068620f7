"""Our websockets connections: every message goes to one handler as soon as its last
frame is parsed, and a frame is written at once when the socket can take it.

websockets' `recv()` wakes a reader task for each message, and `send()` is a coroutine;
on a tool call that crosses three processes those loop turns were most of the latency
(bench/tool_roundtrip.py). These subclasses take data frames in `process_event`, which
websockets calls from `data_received`, and hand each whole message to the handler given
to `dispatch_to()`:

- messages reach the handler in arrival order, whole (fragments joined, text decoded);
- a handler that returns an awaitable holds back the messages after it, and pauses
  reading, until that is done: the order holds (a `connect` is complete before the next
  request is read) and a slow consumer slows the socket instead of filling memory;
- messages that arrive before `dispatch_to()` wait for it;
- invalid UTF-8 and too many fragments fail the connection (1007, 1009) as websockets does.

Whole unfragmented data frames (nearly every message) are read by `data_received` itself
while websockets' parser rests between frames; websockets reads everything else (the
handshake, pings, close, fragments, any frame it must refuse) exactly as it would alone.

Never call `recv()` or iterate these connections: nothing reaches websockets' own queue.
This relies on websockets 17 internals (`process_event`, `protocol`, `send_data`,
`paused`, the parser resting in `StreamReader.at_eof`), which is why pyproject pins
websockets below 18.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import struct
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.connection import Connection
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.frames import DATA_OPCODES, CloseCode, Frame, Opcode
from websockets.protocol import Side, State
from websockets.streams import StreamReader

try:
    from websockets.speedups import apply_mask
except ImportError:  # pragma: no cover - websockets without its C extension
    from websockets.utils import apply_mask

log = logging.getLogger(__name__)

MessageHandler = Callable[[str | bytes], Awaitable[None] | None]

# a message in more frames than this is refused (websockets' own default limit)
MAX_FRAGMENTS = 4096
# messages held back (behind a handler still at work) before reading pauses
BACKLOG_HIGH = 64

# headers of an unfragmented data frame (RFC 6455 section 5.2) by payload length
_TEXT_FIN, _BINARY_FIN = 0x80 | Opcode.TEXT, 0x80 | Opcode.BINARY
_DATA_FIN = frozenset((_TEXT_FIN, _BINARY_FIN))  # FIN set, no RSV bits, not a fragment
_SHORT_HEADER, _MEDIUM_HEADER, _LONG_HEADER = (struct.Struct(f) for f in ("!BB", "!BBH", "!BBQ"))
_MEDIUM_LENGTH, _LONG_LENGTH = struct.Struct("!H"), struct.Struct("!Q")
# where websockets' parser waits when it is between frames
_AT_FRAME_BOUNDARY = StreamReader.at_eof.__code__


def _frame_head(
    buffer: bytes | bytearray, offset: int, size: int
) -> tuple[int, int, int, bytes | None] | None:
    """(first byte, payload start, payload end, mask key or None) of the frame at
    `offset`, or None while its header is still incomplete."""
    if size - offset < 2:
        return None
    first, second = buffer[offset], buffer[offset + 1]
    length, at = second & 0x7F, offset + 2
    if length == 126:
        if size - at < 2:
            return None
        (length,) = _MEDIUM_LENGTH.unpack_from(buffer, at)
        at += 2
    elif length == 127:
        if size - at < 8:
            return None
        (length,) = _LONG_LENGTH.unpack_from(buffer, at)
        at += 8
    key = None
    if second & 0x80:
        if size - at < 4:
            return None
        key = bytes(buffer[at : at + 4])
        at += 4
    return first, at, at + length, key


class DispatchingConnection(Connection):
    """Hands messages to a handler instead of websockets' receive queue (see the module)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._message_handler: MessageHandler | None = None
        self._fragments: list[bytes] = []
        self._fragments_text = False
        self._failed = False
        self._backlog: deque[str | bytes] = deque()
        self._draining: asyncio.Task[None] | None = None
        # the awaitable handed to a drain task that has not taken its first step yet
        self._unstarted: Awaitable[None] | None = None
        self._reading_held = False  # reading paused by us (not by websockets' own flow control)
        self._closing = False  # our close frame is going out: the peer's must be read
        self._failing: asyncio.Task[None] | None = None
        # the start of a data frame not yet whole, read by us (see data_received)
        self._partial = bytearray()
        # a longer data frame is left to websockets, which refuses it (1009)
        limits = (self.protocol.max_message_size, self.protocol.max_fragment_size)
        self._size_limit = min((limit for limit in limits if limit is not None), default=math.inf)

    # -- receiving ------------------------------------------------------------------------
    def dispatch_to(self, handler: MessageHandler) -> None:
        """Start handing messages to `handler`; those that came first are handed now."""
        self._message_handler = handler
        if self._backlog and self._draining is None:
            self._start_draining(None)

    async def dispatch_done(self) -> None:
        """Return once the connection is closed and every message received was handled."""
        await self.wait_closed()
        while self._draining is not None:
            await asyncio.wait({self._draining})

    def stop_dispatch(self) -> None:
        """Drop what is still held back and cancel the handler at work (the peer is gone)."""
        self._backlog.clear()
        if self._draining is not None:
            self._draining.cancel()
        # A task cancelled before its first step never runs its coroutine, so the
        # awaitable it was given would be left pending: end it here.
        unstarted, self._unstarted = self._unstarted, None
        if isinstance(unstarted, asyncio.Future):
            unstarted.cancel()
        elif asyncio.iscoroutine(unstarted):
            unstarted.close()

    def process_event(self, event: Any) -> None:
        if not isinstance(event, Frame) or event.opcode not in DATA_OPCODES:
            super().process_event(event)  # the handshake, pings and pongs
            return
        message = self._assemble_message(event)
        if message is not None:
            self._receive(message)

    def _receive(self, message: str | bytes) -> None:
        if self._message_handler is None or self._draining is not None or self._backlog:
            self._backlog.append(message)
            if len(self._backlog) > BACKLOG_HIGH:
                self._hold_reading()
            return
        pending = self._hand_over(message)
        if pending is not None:
            self._hold_reading()
            self._start_draining(pending)

    # -- the data frame fast path ------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        """Read whole unfragmented data frames ourselves while websockets rests between
        frames (its generator parser cost about 4 us a frame). websockets gets the rest
        (handshake, pings, close, fragments, anything odd or too big) as whole frames, so
        it is at rest again after each one, or everything from the first frame it must
        read as it arrives."""
        partial = self._partial
        if partial:
            partial += data
            self._read_frames(partial)
        elif self._websockets_at_rest():
            self._read_frames(data)
        else:
            super().data_received(data)

    def _websockets_at_rest(self) -> bool:
        """True when websockets waits for the first byte of a frame of an open connection
        outside a fragmented message: its parser is suspended in `at_eof()` (if that
        ever changes, this is False and websockets reads everything, as it would)."""
        protocol = self.protocol
        if (
            self._failed
            or protocol.state is not State.OPEN
            or protocol.current_size is not None
            or protocol.reader.buffer
            or self.debug
        ):
            return False
        waiting: Any = protocol.parser
        while (inner := getattr(waiting, "gi_yieldfrom", None)) is not None:
            waiting = inner
        return getattr(waiting, "gi_code", None) is _AT_FRAME_BOUNDARY

    def _read_frames(self, buffer: bytes | bytearray) -> None:
        offset, size = 0, len(buffer)
        while offset < size:
            head = _frame_head(buffer, offset, size)
            if head is None:  # not even the header yet
                break
            first, start, end, key = head
            simple = (
                first in _DATA_FIN
                and (key is not None) is (self.protocol.side is Side.SERVER)
                and end - start <= self._size_limit
            )
            if simple and end > size:  # the rest of this frame is still coming
                break
            if not simple:
                if end > size:  # websockets must see it arrive (and may refuse it)
                    self._to_websockets(buffer, offset, size)
                    return
                self._to_websockets(buffer, offset, end)
                offset = end
                if not self._websockets_at_rest():
                    self._to_websockets(buffer, offset, size)
                    return
                continue
            with memoryview(buffer) as view:  # one copy of a payload, even a long one
                chunk = view[start:end]
                payload = bytes(chunk) if key is None else apply_mask(chunk, key)
                chunk.release()
            offset = end
            message = self._decoded(payload, first == _TEXT_FIN)
            if message is None:  # invalid UTF-8: the connection is failing, read no more
                self._partial = bytearray()
                return
            self._receive(message)
        self._keep(buffer, offset, size)

    def _decoded(self, payload: bytes, is_text: bool) -> str | bytes | None:
        """A text message decoded (invalid UTF-8 fails the connection: None), or bytes."""
        if not is_text:
            return payload
        try:
            return payload.decode()
        except UnicodeDecodeError as exc:
            self._fail_connection(CloseCode.INVALID_DATA, f"{exc.reason} at position {exc.start}")
            return None

    def _to_websockets(self, buffer: bytes | bytearray, start: int, end: int) -> None:
        """Give websockets buffer[start:end] (whole frames, or all that is left)."""
        chunk = bytes(buffer[start:end])
        if buffer is self._partial:
            self._partial = bytearray()
        super().data_received(chunk)

    def _keep(self, buffer: bytes | bytearray, offset: int, size: int) -> None:
        """Hold the start of a frame not yet whole until the rest arrives."""
        if buffer is self._partial:
            del buffer[:offset]
        elif offset < size:
            with memoryview(buffer) as view:  # one copy (a transfer chunk is 256 KiB)
                self._partial = bytearray(view[offset:size])

    def _assemble_message(self, frame: Frame) -> str | bytes | None:
        """The whole message once its last frame is in; None before that or on failure."""
        if self._failed:
            return None
        if frame.opcode is not Opcode.CONT:
            self._fragments_text = frame.opcode is Opcode.TEXT
            self._fragments = []
        if frame.fin and not self._fragments:
            data = bytes(frame.data)
        else:
            self._fragments.append(bytes(frame.data))
            if len(self._fragments) > MAX_FRAGMENTS:
                self._fail_connection(CloseCode.MESSAGE_TOO_BIG, "too many fragments")
                return None
            if not frame.fin:
                return None
            data, self._fragments = b"".join(self._fragments), []
        return self._decoded(data, self._fragments_text)

    def _hand_over(self, message: str | bytes) -> Awaitable[None] | None:
        assert self._message_handler is not None
        try:
            return self._message_handler(message)
        except Exception:
            # one bad message must not take the socket down with it
            log.exception("message handler failed")
            return None

    def _start_draining(self, pending: Awaitable[None] | None) -> None:
        self._unstarted = pending
        self._draining = self.loop.create_task(self._drain_backlog(pending))
        # a done callback, not `finally`: a task cancelled before its first step runs no code
        self._draining.add_done_callback(self._drained)

    def _drained(self, task: asyncio.Task[None]) -> None:
        if self._draining is not task:
            return
        self._draining = None
        if self._backlog:  # arrived between the task's end and this callback
            self._start_draining(None)
        else:
            self._release_reading()

    async def _drain_backlog(self, pending: Awaitable[None] | None) -> None:
        """Finish the handler at work, then the held-back messages in order."""
        self._unstarted = None
        while True:
            if pending is not None:
                try:
                    await pending
                except Exception:
                    log.exception("message handler failed")
            if not self._backlog:
                return
            pending = self._hand_over(self._backlog.popleft())

    def _hold_reading(self) -> None:
        if not self._reading_held and not self._closing and not self.transport.is_closing():
            self._reading_held = True
            self.transport.pause_reading()

    def _release_reading(self) -> None:
        if self._reading_held:
            self._reading_held = False
            if not self.transport.is_closing():
                self.transport.resume_reading()

    def _fail_connection(self, code: CloseCode, reason: str) -> None:
        """Fail the connection as websockets' recv() would, from a protocol callback."""
        self._failed = True
        self._fragments = []

        async def fail() -> None:
            with contextlib.suppress(ConnectionClosed):
                async with self.send_context():
                    self.protocol.fail(code, reason)

        self._failing = self.loop.create_task(fail())

    async def close(self, code: int = CloseCode.NORMAL_CLOSURE, reason: str = "") -> None:
        """Close as websockets does, reading again so the peer's close frame is seen even
        while a handler is at work (messages that come first join the backlog)."""
        self._closing = True
        self._release_reading()
        await super().close(code, reason)

    # -- sending --------------------------------------------------------------------------
    def write_now(self, message: str | bytes | memoryview) -> bool:
        """Write one unfragmented message at once if that needs no waiting; False when
        the caller must use `send()` (write buffer full, or the connection not open)."""
        if (
            self.protocol.state is not State.OPEN
            or self.paused
            or self.send_in_progress is not None
        ):
            return False
        try:
            if isinstance(message, str):
                self._write_frame(_TEXT_FIN, message.encode())
            else:
                self._write_frame(_BINARY_FIN, message)
        except Exception as exc:  # the socket is gone: as send() does, end the connection
            self.set_connection_exc(exc)
            self.transport.abort()
        return True

    def _write_frame(self, first_byte: int, data: bytes | bytearray | memoryview) -> None:
        """The frame websockets' `Frame.serialize` makes, written as header and payload
        without its Frame object and its two copies of the payload (transfer chunks are
        256 KiB each, and a tool call crosses four sockets). A client masks, which copies
        once: the caller may then reuse its buffer. A server hands `data` itself to the
        transport, which may keep it until it is written."""
        length = len(data)
        mask_bit = 0x80 if self.protocol.side is Side.CLIENT else 0
        if length < 126:
            header = _SHORT_HEADER.pack(first_byte, mask_bit | length)
        elif length < 65536:
            header = _MEDIUM_HEADER.pack(first_byte, mask_bit | 126, length)
        else:
            header = _LONG_HEADER.pack(first_byte, mask_bit | 127, length)
        if mask_bit:
            key = _MASK_KEYS.take()
            self.transport.writelines((header + key, apply_mask(data, key)))
        else:
            self.transport.writelines((header, data))


class _MaskKeys:
    """A client's frame masks (RFC 6455 5.3: unpredictable, from a strong source), cut
    from one os.urandom call per 1024 frames instead of a getrandom syscall per frame."""

    def __init__(self, pool_size: int = 4096) -> None:
        self._pool_size = pool_size
        self._pool = b""
        self._at = 0

    def take(self) -> bytes:
        at = self._at
        if at + 4 > len(self._pool):
            self._pool, at = os.urandom(self._pool_size), 0
        self._at = at + 4
        return self._pool[at : at + 4]


_MASK_KEYS = _MaskKeys()


class DispatchingServerConnection(DispatchingConnection, ServerConnection):
    """The gateway's side of a connection."""


class DispatchingClientConnection(DispatchingConnection, ClientConnection):
    """GatewayClient's side of a connection."""
