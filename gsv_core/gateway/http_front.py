"""The gateway's HTTP front door: channel webhooks on the WebSocket port.

websockets' HTTP parser serves the opening handshake only: its `process_request` hook
sees a request's head, never a body (it refuses one). Platforms that call us back
(WhatsApp Cloud API) POST JSON to `/channels/{name}/webhook`, so every connection is
first seen by `FrontDoorConnection` (a subclass plugged in through the documented
`create_connection` parameter of `websockets.asyncio.server.serve`). It holds the bytes
until the request line is in:

* `GET|POST /channels/{name}/webhook[?query]`: h11 reads the request (at most MAX_HEAD
  of head, MAX_BODY of body, Content-Length only), the channel's `handle_webhook` gets an
  `HttpRequest`, one HTTP/1.1 response goes back and the connection closes;
* anything else: the held bytes go to websockets unchanged (`/ws`, `/health`, 404s).

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
import time
from collections.abc import Coroutine
from typing import Any
from typing import ClassVar
from urllib.parse import parse_qs

import h11
from websockets.asyncio.server import ServerConnection

from gsv_core.channels.base import HttpRequest
from gsv_core.channels.base import HttpResponse
from gsv_core.errors import GsvError
from gsv_core.gateway.state import Gateway

log = logging.getLogger(__name__)

MAX_HEAD = 16 * 1024
MAX_BODY = 5 * 1024 * 1024
REPLY_WITHIN = 8.0  # seconds from the connection; below websockets' open_timeout
# routing only (h11 parses the request): which connections are webhook calls
_WEBHOOK_LINE = re.compile(rb"[A-Z]+ /channels/([a-z0-9][a-z0-9_-]{0,63})/webhook(?:\?\S*)? ")
_JSON = "application/json"


class BadRequest(Exception):
    """A webhook request we will not read: answered with `status`, then closed."""

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

    def connection_type(self) -> type[ServerConnection]:
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


class FrontDoorConnection(ServerConnection):
    """A websockets connection that answers webhook requests itself (see the module).

    States: waiting for the request line, reading the request (h11), answering (reading
    paused), draining the body of a refused request (so the client reads our answer
    instead of a reset), and passthrough (websockets has the connection)."""

    front: ClassVar[HttpFront]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # when bytes last came from the peer: a message, a pong, its own ping (the one
        # keepalive pings only peers silent a while, gateway/keepalive.py)
        self.heard = time.monotonic()
        self._held = bytearray()  # bytes before the request line is complete
        self._passthrough = False
        self._http: h11.Connection | None = None  # a webhook request, read by h11
        self._channel = ""
        self._head: h11.Request | None = None
        self._body = bytearray()
        self._answering = False
        self._drain = 0  # body bytes still to discard before closing
        self._deadline = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._deadline = self.loop.time() + REPLY_WITHIN

    def data_received(self, data: bytes) -> None:
        if self._passthrough:
            self.heard = time.monotonic()
            super().data_received(data)
        elif self._drain:
            self._drain = max(0, self._drain - len(data))
            if not self._drain:
                self.transport.close()
        elif self._answering:
            return
        elif self._http is None:
            self._held += data
            self._route()
        else:
            self._feed(data)

    # asyncio closes the transport when eof_received returns false; websockets types it
    # as returning None because it never writes after EOF, but we still have to answer
    def eof_received(self) -> bool | None:  # type: ignore[override]
        if self._passthrough:
            super().eof_received()
            return None
        if self._drain:
            self.transport.close()
        elif self._http is not None and not self._answering:
            self._feed(b"")  # h11 sees the end: a request cut short is refused (400)
        elif not self._answering:
            self.transport.close()
        return True  # keep the transport open to write our answer

    def _route(self) -> None:
        """Once the request line is in: a webhook goes to h11, anything else to websockets."""
        line_end = self._held.find(b"\r\n")
        if line_end < 0 and len(self._held) <= MAX_HEAD:
            return
        line = _WEBHOOK_LINE.match(self._held, 0, max(line_end, 0))
        held, self._held = bytes(self._held), bytearray()
        if line is None:
            self._passthrough = True  # websockets takes the connection from its first byte
            super().data_received(held)
            return
        self._channel = line.group(1).decode()
        self._http = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
        self._feed(held)

    def _feed(self, data: bytes) -> None:
        assert self._http is not None
        self._http.receive_data(data)
        try:
            self._advance(self._http)
        except h11.RemoteProtocolError as exc:
            if data == b"":  # the client stopped sending mid-request
                self._refuse(BadRequest(400, "the request ended before its body"))
            else:
                self._refuse(BadRequest(exc.error_status_hint, str(exc)))
        except BadRequest as exc:
            self._refuse(exc)

    def _advance(self, reader: h11.Connection) -> None:
        while True:
            event = reader.next_event()
            if event is h11.NEED_DATA:
                return
            if isinstance(event, h11.Request):
                self._head = _check_head(event, reader)
                if reader.they_are_waiting_for_100_continue:
                    interim = h11.InformationalResponse(
                        status_code=100, headers=[], reason=b"Continue"
                    )
                    self.transport.write(reader.send(interim) or b"")
            elif isinstance(event, h11.Data):
                self._body += event.data
            elif isinstance(event, h11.EndOfMessage):
                self._start_answer()
                return
            else:  # ConnectionClosed before the end of the request
                raise BadRequest(400, "the request ended before its body")

    def _start_answer(self) -> None:
        assert self._head is not None
        self._answering = True
        self.transport.pause_reading()
        target = self._head.target.decode("latin-1")
        path, _, query = target.partition("?")
        headers: dict[str, str] = {}
        for name, value in self._head.headers:
            key = name.decode("latin-1")
            text = value.decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        parsed = parse_qs(query, keep_blank_values=True)
        method = self._head.method.decode()
        request = HttpRequest(method, path, parsed, headers, bytes(self._body))
        self.front.spawn(self._answer(self._channel, request))

    def _refuse(self, exc: BadRequest) -> None:
        """Answer a request we will not read; then swallow the body it is still sending."""
        self._drain = exc.body_length
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


def _check_head(head: h11.Request, reader: h11.Connection) -> h11.Request:
    """The webhook's own limits on a request head h11 has read (BadRequest if not met)."""
    headers = {name: value for name, value in head.headers}
    # a client that asked "100-continue" sends no body once it has our refusal
    length = int(headers.get(b"content-length", b"0"))
    coming = 0 if reader.they_are_waiting_for_100_continue else length
    coming = max(0, coming - len(reader.trailing_data[0]))
    if b"transfer-encoding" in headers:
        raise BadRequest(411, "send the body with a Content-Length")
    if length > MAX_BODY:
        raise BadRequest(413, f"body over {MAX_BODY // (1024 * 1024)} MiB", coming)
    if head.method not in (b"GET", b"POST"):
        raise BadRequest(405, "webhooks take GET or POST", coming)
    return head


def _phrase(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


def _json_response(status: int, error: str) -> HttpResponse:
    return HttpResponse(status, (json.dumps({"error": error}) + "\n").encode(), _JSON)
