"""The gateway's HTTP front door: channel webhooks on the WebSocket port.

websockets' HTTP parser serves the opening handshake only: it refuses a request with a
body. Platforms that call us back (WhatsApp Cloud API) POST JSON to
`/channels/{name}/webhook`, so every connection is first seen by `FrontDoorConnection`
(plugged in through the documented `create_connection` parameter of
`websockets.asyncio.server.serve`). It buffers the request line:

* `GET|POST /channels/{name}/webhook[?query]`: read the head and exactly Content-Length
  bytes (at most MAX_BODY), hand an `HttpRequest` to the channel's `handle_webhook`, write
  one HTTP/1.1 response and close the connection;
* anything else: the buffered bytes go to websockets unchanged (`/ws`, `/health`, 404s).

Webhooks need no gateway token: the platform calling them has none, so each channel
authenticates its platform itself (WhatsApp: the HMAC signature of the body).

websockets aborts a connection whose handshake is not done after `open_timeout` (10 s by
default, counted from the connection): a slow body or a slow adapter is cut there. To
answer before that, a handler still running after REPLY_WITHIN gets a 503 (the platform
retries); the handler itself is shielded and runs to its end, so a message it was
storing is not left half-done.
"""

from __future__ import annotations

import asyncio
import http
import json
import logging
import re
from collections.abc import Coroutine
from typing import Any, ClassVar
from urllib.parse import parse_qs

from gsv_core.channels.base import HttpRequest, HttpResponse
from gsv_core.errors import GsvError
from gsv_core.gateway.app import Gateway
from gsv_core.rpc.websocket import DispatchingServerConnection

log = logging.getLogger(__name__)

MAX_HEAD = 16 * 1024
MAX_BODY = 5 * 1024 * 1024
REPLY_WITHIN = 8.0  # seconds from the connection; below websockets' open_timeout
_WEBHOOK_LINE = re.compile(
    rb"([A-Z]+) (/channels/([a-z0-9][a-z0-9_-]{0,63})/webhook)(?:\?(\S*))? HTTP/1\.[01]"
)
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_JSON = "application/json"


class BadRequest(Exception):
    """A webhook request we cannot read: answered with `status`, then closed."""

    def __init__(self, status: int, message: str, body_length: int = 0) -> None:
        super().__init__(message)
        self.status = status
        self.body_length = body_length  # bytes the client will still send


class HttpFront:
    """Routes webhook requests to channel adapters and owns their tasks."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.server_header = f"gsv/{gateway.version}"
        self._tasks: set[asyncio.Task[Any]] = set()

    def connection_type(self) -> type[DispatchingServerConnection]:
        """The `create_connection` class for `serve()`, bound to this front door."""
        return type("BoundFrontDoorConnection", (FrontDoorConnection,), {"front": self})

    def spawn(self, work: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def respond(self, channel: str, request: HttpRequest) -> HttpResponse:
        """The channel's answer to a webhook request; errors become short JSON answers."""
        adapter = self.gateway.channels.adapters.get(channel)
        handler = getattr(adapter, "handle_webhook", None)
        if handler is None:
            return _json_response(404, f"no webhook for channel '{channel}'")
        try:
            response = await handler(request)
        except GsvError as exc:
            status = exc.code if 400 <= exc.code <= 599 else 500
            return _json_response(status, exc.message)
        except Exception:
            log.exception("the %s webhook failed", channel)
            return _json_response(500, "internal error")
        if not isinstance(response, HttpResponse):
            log.error("the %s webhook returned %r, not an HttpResponse", channel, response)
            return _json_response(500, "internal error")
        return response


class FrontDoorConnection(DispatchingServerConnection):
    """A websockets connection that answers webhook requests itself (see the module).

    States: reading the head, reading the body, answering (reading paused), draining the
    body of a refused request (so the client reads our answer instead of a reset), and
    passthrough (websockets has the connection)."""

    front: ClassVar[HttpFront]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._buffer = bytearray()
        self._passthrough = False
        self._webhook: tuple[str, HttpRequest, int] | None = None  # channel, head, length
        self._answering = False
        self._drain = 0  # body bytes still to discard before closing
        self._deadline = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._deadline = self.loop.time() + REPLY_WITHIN

    def data_received(self, data: bytes) -> None:
        if self._passthrough:
            super().data_received(data)
        elif self._drain:
            self._drain = max(0, self._drain - len(data))
            if not self._drain:
                self.transport.close()
        elif not self._answering:
            self._buffer += data
            try:
                self._advance()
            except BadRequest as exc:
                self._refuse(exc)

    # asyncio closes the transport when eof_received returns false; websockets types it
    # as returning None because it never writes after EOF, but we still have to answer
    def eof_received(self) -> bool | None:  # type: ignore[override]
        if self._passthrough:
            super().eof_received()
            return None
        if self._drain:
            self.transport.close()
        elif self._webhook is not None and not self._answering:
            self._answer_now(_json_response(400, "the request ended before its body"))
        return True  # keep the transport open to write our answer

    def _advance(self) -> None:
        if self._webhook is None:
            line_end = self._buffer.find(b"\r\n")
            if line_end < 0:
                if len(self._buffer) > MAX_HEAD:
                    self._pass_on()
                return
            line = _WEBHOOK_LINE.fullmatch(bytes(self._buffer[:line_end]))
            if line is None:
                self._pass_on()
                return
            head_end = self._buffer.find(b"\r\n\r\n")
            if head_end < 0:
                if len(self._buffer) > MAX_HEAD:
                    raise BadRequest(431, "request head too large")
                return
            header_block = bytes(self._buffer[line_end + 2 : head_end])
            del self._buffer[: head_end + 4]
            try:
                self._webhook = _parse_head(line, header_block)
            except BadRequest as exc:
                exc.body_length = max(0, exc.body_length - len(self._buffer))
                raise
            if self._webhook[1].headers.get("expect", "").lower() == "100-continue":
                self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        channel, head, length = self._webhook
        if len(self._buffer) < length:
            return
        body = bytes(self._buffer[:length])
        self._answering = True
        self.transport.pause_reading()
        request = HttpRequest(head.method, head.path, head.query, head.headers, body)
        self.front.spawn(self._answer(channel, request))

    def _pass_on(self) -> None:
        """Not a webhook: websockets takes the connection from its first byte."""
        self._passthrough = True
        buffered, self._buffer = bytes(self._buffer), bytearray()
        super().data_received(buffered)

    def _refuse(self, exc: BadRequest) -> None:
        """Answer a request we will not read; then swallow the body it is still sending."""
        self._drain = exc.body_length
        self._buffer.clear()
        self._answer_now(_json_response(exc.status, str(exc)), close=not self._drain)

    async def _answer(self, channel: str, request: HttpRequest) -> None:
        work = self.front.spawn(self.front.respond(channel, request))
        response = _json_response(503, "the channel is busy: try again")
        try:
            async with asyncio.timeout_at(self._deadline):
                response = await asyncio.shield(work)
        except TimeoutError:
            log.warning("the %s webhook took over %g s: answered 503", channel, REPLY_WITHIN)
        finally:
            self._answer_now(response)

    def _answer_now(self, response: HttpResponse, close: bool = True) -> None:
        self._answering = True
        if self.transport.is_closing():
            return
        head = (
            f"HTTP/1.1 {response.status} {_phrase(response.status)}\r\n"
            f"Content-Type: {response.content_type}\r\n"
            f"Content-Length: {len(response.body)}\r\n"
            f"Connection: close\r\nServer: {self.front.server_header}\r\n\r\n"
        )
        self.transport.write(head.encode("latin-1") + response.body)
        if close:
            self.transport.close()  # once the answer is flushed


def _parse_head(line: re.Match[bytes], header_block: bytes) -> tuple[str, HttpRequest, int]:
    """(channel, request without body, body length) of a webhook request head."""
    method, path, channel, query = line.groups()
    headers: dict[str, str] = {}
    for raw in header_block.split(b"\r\n") if header_block else []:
        name, colon, value = raw.decode("latin-1").partition(":")
        if not colon or not _HEADER_NAME.fullmatch(name):
            raise BadRequest(400, "malformed header line")
        key = name.lower()
        if key in headers and key == "content-length":
            raise BadRequest(400, "more than one Content-Length")
        headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    if "transfer-encoding" in headers:
        raise BadRequest(411, "send the body with a Content-Length")
    length_text = headers.get("content-length", "0")
    if not length_text.isdigit() or len(length_text) > 12:
        raise BadRequest(400, "invalid Content-Length")
    length = int(length_text)
    # a client that asked "100-continue" sends no body once it has our refusal
    coming = 0 if headers.get("expect", "").lower() == "100-continue" else length
    if length > MAX_BODY:
        raise BadRequest(413, f"body over {MAX_BODY // (1024 * 1024)} MiB", coming)
    if method not in (b"GET", b"POST"):
        raise BadRequest(405, "webhooks take GET or POST", coming)
    parsed = parse_qs((query or b"").decode("latin-1"), keep_blank_values=True)
    request = HttpRequest(method.decode(), path.decode(), parsed, headers, b"")
    return channel.decode(), request, length


def _phrase(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


def _json_response(status: int, error: str) -> HttpResponse:
    return HttpResponse(status, (json.dumps({"error": error}) + "\n").encode(), _JSON)
