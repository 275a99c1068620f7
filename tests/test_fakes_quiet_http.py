"""The test fakes' HTTP server (tests/fakes/quiet_http.py) keeps quiet about a client
that resets its connection, and still prints every other error."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from tests.fakes.quiet_http import QuietHTTPServer


class _Recording(QuietHTTPServer):
    """Tells the test when a request's error has been handled (or kept quiet)."""

    handled = threading.Event()

    def handle_error(self, request: Any, client_address: Any) -> None:
        try:
            super().handle_error(request, client_address)
        finally:
            self.handled.set()


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        raise ValueError("a real bug in a fake")

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[_Recording]:
    httpd = _Recording(("127.0.0.1", 0), _Handler)
    httpd.handled = threading.Event()
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)


def test_a_client_that_resets_its_connection_prints_nothing(
    server: _Recording, capfd: pytest.CaptureFixture[str]
) -> None:
    client = socket.create_connection(("127.0.0.1", server.server_address[1]))
    client.sendall(b"GET / HT")  # half a request line: the handler waits for the rest
    # closed with no linger: a reset, as a client dropping its pooled connection sends
    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    client.close()
    assert server.handled.wait(10), "the reset reached the server's error handling"
    assert "Traceback" not in capfd.readouterr().err


def test_any_other_error_is_still_printed(
    server: _Recording, capfd: pytest.CaptureFixture[str]
) -> None:
    with socket.create_connection(("127.0.0.1", server.server_address[1])) as client:
        client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert server.handled.wait(10), "the handler's error reached the server"
    err = capfd.readouterr().err
    assert "Traceback" in err and "ValueError: a real bug in a fake" in err
