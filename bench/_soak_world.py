"""The world bench/soak.py drives a gateway through: what the instant fake model answers
(plain text, a sub-agent, a web fetch, a node tool call, chosen by a tag in the message),
a local web site for the fetches, and a node daemon process that comes and goes."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from contextlib import ExitStack
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench._servers import node_process
from tests.fakes.llm_server import RecordedRequest
from tests.fakes.llm_server import ToolCall
from tests.fakes.llm_server import Turn
from tests.fakes.llm_server import reply

NODE_ID = "soak"
PAGE = b"<html><head><title>Soak</title></head><body><h1>Soak</h1><p>A page.</p></body></html>"

# a tag in a user message makes the model's first answer a tool call
SPAWN, FETCH, READ = "[spawn]", "[fetch]", "[read]"


def _last_text(request: RecordedRequest) -> tuple[str, str]:
    """(role, text) of the last message of an OpenAI chat-completions request."""
    last = request.body["messages"][-1]
    content = last.get("content")
    if isinstance(content, list):
        content = " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(last.get("role")), str(content or "")


def model_turns(web_url: str) -> Any:
    """The fake model's `choose`: a tool call for a tagged user message, else a line."""

    def choose(request: RecordedRequest) -> Turn:
        role, text = _last_text(request)
        if role == "user" and SPAWN in text:
            return reply(ToolCall("gsv__Spawn", {"task": "Say done."}))
        if role == "user" and FETCH in text:
            return reply(ToolCall("gsv__WebFetch", {"url": web_url}))
        if role == "user" and READ in text:
            return reply(ToolCall(f"{NODE_ID}__Read", {"path": "small.txt"}))
        return reply("Done.", usage=(40, 2))

    return choose


class _Page(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # as tests/fakes/llm_server.py: no ~40 ms stall a page

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.send_header("content-length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)


@contextmanager
def web_site() -> Iterator[str]:
    """A one-page web site on 127.0.0.1 (in a thread); yields its URL."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1})
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/page"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


class NodeCycler:
    """A real node daemon process that is stopped and started again on `cycle()`."""

    def __init__(self, url: str, token: str, root: Path) -> None:
        self.url, self.token, self.root = url, token, root
        self.workspace = root / "node-ws"
        self.workspace.mkdir(parents=True, exist_ok=True)
        (self.workspace / "small.txt").write_text("one\ntwo\n")
        self._stack = ExitStack()
        self.reconnects = 0

    def start(self) -> None:
        self._stack.enter_context(
            node_process(self.url, self.token, NODE_ID, self.workspace, self.root / "node-home")
        )

    def stop(self) -> None:
        self._stack.close()

    async def cycle(self) -> None:
        await asyncio.to_thread(self.stop)
        await asyncio.to_thread(self.start)
        self.reconnects += 1

    async def online(self, client: Any) -> None:
        """Wait (bounded) until the gateway lists the node online."""
        for _ in range(600):
            listed = await client.call("nodes.list")
            if any(n["nodeId"] == NODE_ID and n.get("online") for n in listed["nodes"]):
                return
            await asyncio.sleep(0.05)
        raise RuntimeError("the node never came online")


@contextlib.contextmanager
def node_cycler(url: str, token: str, root: Path) -> Iterator[NodeCycler]:
    cycler = NodeCycler(url, token, root)
    cycler.start()
    try:
        yield cycler
    finally:
        cycler.stop()
