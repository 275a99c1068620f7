"""JSON frames (`req`, `res`, `evt`, docs/protocol.md#frames) and the binary transfer frame; no I/O.

`parse_frame()` turns one text message into a frame or raises `FrameError`, which says
whether the peer can be answered (a `req` with a usable id but a bad shape) or not.
`encode_*()` produce compact JSON; absent optional fields are left out, never sent as null.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Any
from typing import TypeGuard

from gsv_core.errors import GsvError
from gsv_core.protocol.frame_text import bad_text_path
from gsv_core.protocol.frame_text import may_hold_bad_text
from gsv_core.protocol.frame_text import peek_id

INVALID_DATA = 1007  # the WebSocket close code for data a frame cannot carry

FrameId = str | int


@dataclass(frozen=True, slots=True)
class RequestFrame:
    id: FrameId
    method: str
    params: Any = None


@dataclass(frozen=True, slots=True)
class ResponseFrame:
    id: FrameId
    ok: bool
    payload: Any = None
    error: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class EventFrame:
    event: str
    payload: Any = None
    seq: int | None = None


Frame = RequestFrame | ResponseFrame | EventFrame


class FrameError(ValueError):
    """A text message that is not a valid frame.

    `reply_id` is set when the message was a `req` with a usable id: the peer is owed a
    400 response. Otherwise the message is logged and dropped.
    """

    def __init__(
        self,
        message: str,
        reply_id: FrameId | None = None,
        close_code: int | None = None,
        method: str | None = None,
    ) -> None:
        super().__init__(message)
        self.reply_id = reply_id
        self.method = method  # the request's method, when it could be read
        # nobody can be answered and the peer must hear something: close with this code
        self.close_code = close_code


def _usable_id(value: Any) -> TypeGuard[FrameId]:
    # bool is an int subclass; `true` is not an id
    if isinstance(value, bool):
        return False
    return (isinstance(value, str) and value != "") or isinstance(value, int)


def parse_frame(text: str | bytes) -> Frame:
    """Parse one JSON text message into a frame; raise FrameError if it is not one."""
    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise FrameError(f"invalid JSON: {exc}") from None
    except RecursionError:
        reply_id = peek_id(text)
        raise FrameError(
            "the frame is nested too deeply to read",
            reply_id=reply_id,
            close_code=None if reply_id is not None else INVALID_DATA,
        ) from None
    if not isinstance(data, dict):
        raise FrameError("a frame must be a JSON object")
    kind = data.get("type")
    if kind == "req":
        request = _parse_request(data)
        if may_hold_bad_text(text) and (where := bad_text_path(data)) is not None:
            answerable = bad_text_path(request.id) is None  # an id we can write back
            raise FrameError(
                f"{where}: text with a NUL character or a lone surrogate (\\ud800-\\udfff) "
                "is not accepted",
                reply_id=request.id if answerable else None,
                close_code=None if answerable else INVALID_DATA,
                method=request.method,
            )
        return request
    if kind == "res":
        return _parse_response(data)
    if kind == "evt":
        return _parse_event(data)
    raise FrameError(f"unknown frame type: {kind!r}")


def _parse_request(data: dict[str, Any]) -> RequestFrame:
    frame_id = data.get("id")
    if not _usable_id(frame_id):
        raise FrameError("req frame needs a non-empty string id")
    method = data.get("method")
    if not isinstance(method, str) or not method:
        raise FrameError("req frame needs a non-empty string method", reply_id=frame_id)
    return RequestFrame(id=frame_id, method=method, params=data.get("params"))


def _parse_response(data: dict[str, Any]) -> ResponseFrame:
    frame_id = data.get("id")
    if not _usable_id(frame_id):
        raise FrameError("res frame needs an id")
    ok = data.get("ok")
    if not isinstance(ok, bool):
        raise FrameError("res frame needs a boolean ok")
    error = data.get("error")
    if not ok and not (
        isinstance(error, dict)
        and isinstance(error.get("code"), int)
        and isinstance(error.get("message"), str)
    ):
        raise FrameError("failed res frame needs an ErrorShape {code, message}")
    return ResponseFrame(
        id=frame_id, ok=ok, payload=data.get("payload"), error=None if ok else error
    )


def _parse_event(data: dict[str, Any]) -> EventFrame:
    event = data.get("event")
    if not isinstance(event, str) or not event:
        raise FrameError("evt frame needs a non-empty string event")
    seq = data.get("seq")
    if seq is not None and (isinstance(seq, bool) or not isinstance(seq, int)):
        raise FrameError("evt seq must be an integer")
    return EventFrame(event=event, payload=data.get("payload"), seq=seq)


# one encoder for every frame: json.dumps with options builds a new JSONEncoder per call,
# a quarter of the cost of encoding a small frame (encode() keeps no state between calls)
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def _dumps(data: dict[str, Any]) -> str:
    return _ENCODER.encode(data)


def encode_json(value: Any) -> str:
    """JSON text as every frame writes it (for a payload kept encoded: `EncodedJson`)."""
    return _ENCODER.encode(value)


@dataclass(frozen=True)
class EncodedJson:
    """A response payload already encoded (`encode_json`), written into the frame as it is:
    a large answer that rarely changes is encoded once, not on every call."""

    text: str


def encode_request(frame_id: FrameId, method: str, params: Any = None) -> str:
    data: dict[str, Any] = {"type": "req", "id": frame_id, "method": method}
    if params is not None:
        data["params"] = params
    return _dumps(data)


def encode_response(frame_id: FrameId, payload: Any = None) -> str:
    data: dict[str, Any] = {"type": "res", "id": frame_id, "ok": True}
    if isinstance(payload, EncodedJson):
        return f'{_dumps(data)[:-1]},"payload":{payload.text}}}'
    if payload is not None:
        data["payload"] = payload
    return _dumps(data)


def encode_error(frame_id: FrameId, error: GsvError) -> str:
    return _dumps({"type": "res", "id": frame_id, "ok": False, "error": error.to_error_shape()})


def encode_event(event: str, payload: Any = None, seq: int | None = None) -> str:
    data: dict[str, Any] = {"type": "evt", "event": event}
    if payload is not None:
        data["payload"] = payload
    if seq is not None:
        data["seq"] = seq
    return _dumps(data)


class EncodedEvent:
    """One event for many peers (a broadcast): its JSON is built once, on first use, and
    each peer adds its own `seq`; the text is what `encode_event` gives."""

    __slots__ = ("_head", "event", "payload")

    def __init__(self, event: str, payload: Any = None) -> None:
        self.event = event
        self.payload = payload
        self._head: str | None = None

    def frame(self, seq: int) -> str:
        head = self._head
        if head is None:
            data: dict[str, Any] = {"type": "evt", "event": self.event}
            if self.payload is not None:
                data["payload"] = self.payload
            head = self._head = _dumps(data)[:-1]  # without its closing brace
        return f'{head},"seq":{seq}}}'


def encode_frame(frame: Frame) -> str:
    """Encode any frame object (used by tests and tools that hold frames)."""
    if isinstance(frame, RequestFrame):
        return encode_request(frame.id, frame.method, frame.params)
    if isinstance(frame, EventFrame):
        return encode_event(frame.event, frame.payload, frame.seq)
    data: dict[str, Any] = {"type": "res", "id": frame.id, "ok": frame.ok}
    if frame.ok and frame.payload is not None:
        data["payload"] = frame.payload
    if not frame.ok:
        data["error"] = frame.error
    return _dumps(data)


# Binary frames: 4-byte little-endian transfer id, then the raw chunk.
_TRANSFER_ID = struct.Struct("<I")
MAX_TRANSFER_CHUNK = 256 * 1024
# a socket's write buffer high-water mark (both ends): room for a few transfer chunks, so
# sending one does not wait for the peer to read the last (websockets' default is 32 KiB)
WRITE_LIMIT = 1024 * 1024


TRANSFER_HEADER_SIZE = _TRANSFER_ID.size


def encode_binary_frame(transfer_id: int, chunk: bytes) -> bytes:
    return _TRANSFER_ID.pack(transfer_id) + chunk


def pack_transfer_header(buffer: bytearray, transfer_id: int) -> None:
    """Write the transfer id into the first TRANSFER_HEADER_SIZE bytes of `buffer`, for a
    frame whose chunk was read in place right after them (no concatenation)."""
    _TRANSFER_ID.pack_into(buffer, 0, transfer_id)


def parse_binary_frame(data: bytes) -> tuple[int, memoryview]:
    """Split a binary frame into (transfer id, chunk); FrameError if shorter than the header.
    The chunk is a view into `data` (no copy: chunks are up to 256 KiB and many)."""
    if len(data) < _TRANSFER_ID.size:
        raise FrameError("binary frame shorter than its 4-byte transfer id")
    (transfer_id,) = _TRANSFER_ID.unpack_from(data)
    return transfer_id, memoryview(data)[_TRANSFER_ID.size :]
