"""The fakes' HTTP/1.1 servers answer with TCP_NODELAY, as real APIs' servers do. With
Nagle's algorithm the stdlib server's second write of an answer (a body after its
headers, a stream's later chunks) waited for the client's delayed ACK: about 40 ms a
request on a kept-alive connection, so the "instant" fake model stalled mid-reply (every
test turn waited that long, and bench/turn_profile.py counted a second wake-up of the
gateway per reply)."""

from __future__ import annotations

import socket
from http.server import BaseHTTPRequestHandler

import pytest

from bench._soak_world import _Page
from tests.fakes.embeddings_server import fake_embeddings_server
from tests.fakes.llm_server import fake_llm_server
from tests.fakes.telegram_api import fake_telegram_api


def _handlers() -> list[type[BaseHTTPRequestHandler]]:
    with fake_llm_server() as llm, fake_embeddings_server() as emb, fake_telegram_api() as tg:
        return [s._httpd.RequestHandlerClass for s in (llm, emb, tg)] + [_Page]


@pytest.mark.parametrize("handler", _handlers(), ids=["llm", "embeddings", "telegram", "page"])
def test_every_fake_answers_without_nagle(handler: type[BaseHTTPRequestHandler]) -> None:
    assert handler.protocol_version == "HTTP/1.1"  # kept alive: where the stall happened
    assert handler.disable_nagle_algorithm is True


def _nodelay_after_setup(handler_class: type[BaseHTTPRequestHandler]) -> int:
    """TCP_NODELAY of a real accepted socket once the handler's own setup() ran on it."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        accepted, address = listener.accept()
        with client, accepted:
            handler = handler_class.__new__(handler_class)
            handler.request, handler.client_address = accepted, address
            handler.setup()
            try:
                return accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            finally:
                handler.finish()


def test_the_flag_sets_nodelay_on_the_connection() -> None:
    with fake_llm_server() as llm:
        assert _nodelay_after_setup(llm._httpd.RequestHandlerClass) != 0
    assert _nodelay_after_setup(BaseHTTPRequestHandler) == 0  # the stdlib's default
