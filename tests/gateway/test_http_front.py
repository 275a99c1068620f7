"""The HTTP front door: webhook GET/POST requests reach a channel's `handle_webhook` on the
gateway's own port, with real HTTP clients; /health and the /ws upgrade are untouched."""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
from dataclasses import dataclass
from dataclasses import field

import pytest

from gsv_core.channels.base import HttpRequest
from gsv_core.channels.base import HttpResponse
from gsv_core.channels.test_channel import TestChannel
from gsv_core.client import GatewayClient
from gsv_core.errors import Forbidden
from gsv_core.gateway.http_front import MAX_BODY
from gsv_core.gateway.http_front import MAX_HEAD
from gsv_core.gateway.server import RunningGateway


@dataclass
class HookedChannel(TestChannel):
    """A test channel with a webhook: records requests, answers what a test set."""

    name: str = "hooked"
    requests: list[HttpRequest] = field(default_factory=list)
    answer: HttpResponse = field(default_factory=lambda: HttpResponse(200, b"ok"))
    fail: Exception | None = None

    async def handle_webhook(self, request: HttpRequest) -> HttpResponse:
        self.requests.append(request)
        if self.fail is not None:
            raise self.fail
        return self.answer


@pytest.fixture
def hooked(gateway: RunningGateway) -> HookedChannel:
    channel = HookedChannel()
    gateway.gateway.channels.adapters["hooked"] = channel
    return channel


def _request(
    gw: RunningGateway,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=10)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def _raw(gw: RunningGateway, *chunks: bytes) -> bytes:
    """Send bytes as they are (one write per chunk) and read the whole answer."""
    with socket.create_connection(("127.0.0.1", gw.port), timeout=10) as sock:
        for chunk in chunks:
            sock.sendall(chunk)
        received = b""
        while data := sock.recv(65536):
            received += data
    return received


async def test_a_webhook_get_reaches_the_channel_with_its_query(
    gateway: RunningGateway, hooked: HookedChannel
) -> None:
    """GET /channels/hooked/webhook?a=1&b=x%20y -> handle_webhook with the parsed query."""
    hooked.answer = HttpResponse(200, b"challenge-123")
    status, headers, body = await asyncio.to_thread(
        _request, gateway, "GET", "/channels/hooked/webhook?a=1&b=x%20y&empty="
    )
    assert (status, body) == (200, b"challenge-123")
    assert headers["Content-Type"] == "text/plain; charset=utf-8"
    assert headers["Connection"] == "close"
    (request,) = hooked.requests
    assert request.method == "GET" and request.path == "/channels/hooked/webhook"
    assert request.query == {"a": ["1"], "b": ["x y"], "empty": [""]}
    assert request.body == b""


async def test_a_webhook_post_delivers_its_exact_body_and_headers(
    gateway: RunningGateway, hooked: HookedChannel
) -> None:
    """POST bodies arrive byte for byte with lower-case header names; the answer's status,
    type and body go back to the client."""
    hooked.answer = HttpResponse(202, b'{"ok":true}', "application/json")
    payload = json.dumps({"entry": ["é" * 40_000]}).encode()
    status, headers, body = await asyncio.to_thread(
        _request, gateway, "POST", "/channels/hooked/webhook", payload,
        {"Content-Type": "application/json", "X-Hub-Signature-256": "sha256=abc"},
    )  # fmt: skip
    assert (status, body) == (202, b'{"ok":true}')
    assert headers["Content-Type"] == "application/json"
    (request,) = hooked.requests
    assert request.method == "POST" and request.body == payload
    assert request.headers["x-hub-signature-256"] == "sha256=abc"
    assert request.headers["content-length"] == str(len(payload))


async def test_a_body_sent_in_pieces_is_read_whole(
    gateway: RunningGateway, hooked: HookedChannel
) -> None:
    """Head and body split over several writes (even mid-line) still make one request."""
    answer = await asyncio.to_thread(
        _raw, gateway,
        b"POST /channels/hooked/webhook HTTP/1.1\r\nHost: x\r\nContent-Len",
        b"gth: 11\r\n\r\nhello",
        b" world",
    )  # fmt: skip
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and answer.endswith(b"\r\n\r\nok")
    assert hooked.requests[0].body == b"hello world"


async def test_health_and_websocket_still_work_beside_webhooks(
    gateway: RunningGateway, hooked: HookedChannel
) -> None:
    """/health answers, a GatewayClient connects over /ws, other paths stay 404."""
    status, _, body = await asyncio.to_thread(_request, gateway, "GET", "/health")
    assert (status, json.loads(body)) == (200, {"status": "healthy"})
    async with GatewayClient(gateway.url, token=gateway.token) as client:
        listed = await client.call("channels.list")
    assert "channels" in listed
    status, _, body = await asyncio.to_thread(_request, gateway, "GET", "/channels/hooked")
    assert status == 404 and "error" in json.loads(body)
    assert hooked.requests == []


async def test_an_oversized_body_is_refused_with_413(
    gateway: RunningGateway, hooked: HookedChannel
) -> None:
    """A body over 5 MiB gets 413 (the client reads the answer, not a reset) and never
    reaches the channel."""
    status, _, body = await asyncio.to_thread(
        _request, gateway, "POST", "/channels/hooked/webhook", b"x" * (MAX_BODY + 1)
    )
    assert status == 413 and "MiB" in json.loads(body)["error"]
    assert hooked.requests == []


@pytest.mark.parametrize(
    ("head", "status"),
    [
        (b"POST /channels/hooked/webhook HTTP/1.1\r\nHost: x\r\nContent-Length: ten\r\n\r\n", 400),
        (b"POST /channels/hooked/webhook HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400),
        (b"POST /channels/hooked/webhook HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n", 400),
        (b"POST /channels/hooked/webhook HTTP/1.1\r\nHost: x\r\nBad Name: x\r\n\r\n", 400),
        (b"POST /channels/hooked/webhook HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n"
         b"Content-Length: 2\r\n\r\n", 400),
        (b"POST /channels/hooked/webhook HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 411),
        (b"PUT /channels/hooked/webhook HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 405),
    ],
)  # fmt: skip
async def test_malformed_requests_are_refused(
    gateway: RunningGateway, hooked: HookedChannel, head: bytes, status: int
) -> None:
    """Bad heads get a 4xx answer and the connection closes; nothing reaches the channel."""
    answer = await asyncio.to_thread(_raw, gateway, head)
    assert answer.startswith(f"HTTP/1.1 {status} ".encode())
    assert hooked.requests == []


async def test_a_request_cut_before_its_body_ends_is_400(
    gateway: RunningGateway, hooked: HookedChannel
) -> None:
    """The client stops sending (EOF) before Content-Length bytes: 400, not delivered."""

    def cut_short() -> bytes:
        with socket.create_connection(("127.0.0.1", gateway.port), timeout=10) as sock:
            sock.sendall(
                b"POST /channels/hooked/webhook HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n{"
            )
            sock.shutdown(socket.SHUT_WR)
            return sock.recv(65536)

    answer = await asyncio.to_thread(cut_short)
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert hooked.requests == []


@pytest.mark.parametrize("channel", ["nope", "test"])
async def test_a_channel_without_a_webhook_is_404(gateway: RunningGateway, channel: str) -> None:
    """An unknown channel, or one whose adapter has no webhook, answers 404."""
    status, _, body = await asyncio.to_thread(
        _request, gateway, "POST", f"/channels/{channel}/webhook", b"{}"
    )
    assert status == 404
    assert json.loads(body) == {"error": f"no webhook for channel '{channel}'"}


async def test_a_failing_webhook_answers_500_without_details(
    gateway: RunningGateway, hooked: HookedChannel
) -> None:
    """An unexpected exception is 500 "internal error" (the details stay in the log);
    a gsv error keeps its code and message."""
    hooked.fail = RuntimeError("secret internals")
    status, _, body = await asyncio.to_thread(
        _request, gateway, "POST", "/channels/hooked/webhook", b"{}"
    )
    assert (status, json.loads(body)) == (500, {"error": "internal error"})
    hooked.fail = Forbidden("verify token mismatch")
    status, _, body = await asyncio.to_thread(
        _request, gateway, "GET", "/channels/hooked/webhook?hub.mode=subscribe"
    )
    assert (status, json.loads(body)) == (403, {"error": "verify token mismatch"})


async def test_expect_continue_is_honoured(gateway: RunningGateway, hooked: HookedChannel) -> None:
    """A client that asks `Expect: 100-continue` is told to go on before it sends the body."""

    def send_after_continue() -> bytes:
        with socket.create_connection(("127.0.0.1", gateway.port), timeout=10) as sock:
            sock.sendall(b"POST /channels/hooked/webhook HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
                         b"Expect: 100-continue\r\n\r\n")  # fmt: skip
            interim = sock.recv(65536)
            assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
            sock.sendall(b"{}")
            received = b""
            while data := sock.recv(65536):
                received += data
            return received

    answer = await asyncio.to_thread(send_after_continue)
    assert answer.startswith(b"HTTP/1.1 200 OK") and hooked.requests[0].body == b"{}"


async def test_a_head_over_the_cap_or_without_host_is_refused(
    gateway: RunningGateway, hooked: HookedChannel
) -> None:
    """A webhook head over MAX_HEAD is 431; an HTTP/1.1 request without Host is 400."""
    line = b"POST /channels/hooked/webhook HTTP/1.1\r\nHost: x\r\n"
    padding = b"X-Pad: " + b"p" * 1000 + b"\r\n"
    answer = await asyncio.to_thread(_raw, gateway, line + padding * (MAX_HEAD // 1000 + 2))
    assert answer.startswith(b"HTTP/1.1 431 ")
    answer = await asyncio.to_thread(
        _raw, gateway, b"POST /channels/hooked/webhook HTTP/1.1\r\nContent-Length: 0\r\n\r\n"
    )
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert hooked.requests == []
