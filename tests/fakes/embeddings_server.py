"""A fake OpenAI-compatible embeddings endpoint (`POST /v1/embeddings`) on 127.0.0.1:0,
a stdlib `ThreadingHTTPServer` in a daemon thread. Its vectors are made of meanings:
words listed together in SYNONYMS share a dimension, so `automobile` is near `car`
though no word is shared; any other word lands in a dimension picked from its letters.
`fail` makes it answer 500; `requests` holds every body it was sent, `headers` their
Authorization. It bills a token per word (`usage.prompt_tokens`, listed in `billed`)
unless `bills` is False, as some local servers answer without `usage`."""

from __future__ import annotations

import json
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes.quiet_http import QuietHTTPServer

SYNONYMS = (
    ("car", "automobile", "vehicle", "sedan"),
    ("dog", "puppy", "canine", "hound"),
    ("doctor", "physician", "dentist", "clinic"),
    ("money", "cash", "salary", "budget"),
)
DIMENSIONS = 32


def vector(text: str) -> list[float]:
    values = [0.0] * DIMENSIONS
    for raw in text.lower().split():
        word = raw.strip(".,!?:;'\"")
        if not word:
            continue
        group = next((n for n, words in enumerate(SYNONYMS) if word in words), None)
        slot = (
            group
            if group is not None
            else len(SYNONYMS) + zlib.crc32(word.encode()) % (DIMENSIONS - len(SYNONYMS))
        )
        values[slot] += 1.0
    return values


class FakeEmbeddingsServer:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[str] = []  # the Authorization header of each request
        self.fail = False
        self.bills = True
        self.billed: list[int] = []  # prompt_tokens of each answer that carried usage
        self._httpd = QuietHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def texts(self) -> list[str]:
        return [text for body in self.requests for text in body.get("input", [])]


@contextmanager
def fake_embeddings_server() -> Iterator[FakeEmbeddingsServer]:
    server = FakeEmbeddingsServer()
    server._thread.start()
    try:
        yield server
    finally:
        server._httpd.shutdown()
        server._httpd.server_close()


def _handler_for(server: FakeEmbeddingsServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # as llm_server.py: no ~40 ms stall per answer

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            server.requests.append(body)
            server.headers.append(self.headers.get("Authorization", ""))
            if server.fail or not self.path.endswith("/v1/embeddings"):
                self._send(500, {"error": {"message": "embeddings are down"}})
                return
            texts = body.get("input") or []
            data = [{"object": "embedding", "index": i, "embedding": vector(t)}
                    for i, t in enumerate(texts)]  # fmt: skip
            answer: dict[str, Any] = {"object": "list", "data": data, "model": body.get("model")}
            if server.bills:
                tokens = sum(len(str(t).split()) for t in texts)
                server.billed.append(tokens)
                answer["usage"] = {"prompt_tokens": tokens, "total_tokens": tokens}
            self._send(200, answer)

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
