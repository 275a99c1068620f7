"""A fake LLM HTTP server on 127.0.0.1 speaking OpenAI chat-completions SSE and Anthropic
messages SSE, for driving the official SDKs (and so the provider adapters and whole gateway
flows) over real HTTP.

It is a stdlib `ThreadingHTTPServer` in a daemon thread, so it serves async tests, a gateway
running in another thread, and a gateway subprocess alike (they only need the URL).

    with fake_llm_server() as server:
        server.enqueue(reply("Hel", "lo", usage=(12, 3)))                   # streamed text
        server.enqueue(reply(ToolCall("n1__Read", {"path": "a.txt"})))      # a tool call
        server.enqueue(ErrorReply(429, "slow down", headers={"retry-after": "1"}))
        server.enqueue(reply("partial", end="truncated"))                    # no finish/stop
        ...
        server.requests[-1].body["messages"]                                 # what the SDK sent
        server.show["llama3.1"] = {"model_info": {"llama.context_length": 131072}}  # Ollama

Turns are answered in FIFO order by whichever endpoint is called; each `Reply` is rendered
in that API's own event shapes (copied from the OpenAI and Anthropic streaming references):

* OpenAI `POST /v1/chat/completions`: `chat.completion.chunk` objects with `choices[].delta`
  (role, content, `reasoning_content` for thinking, `tool_calls[]` with index/id/name and
  argument fragments), a chunk with `finish_reason`, a usage chunk with empty `choices`
  when `stream_options.include_usage` is set, then `data: [DONE]`.
* Anthropic `POST /v1/messages`: `message_start`, then per content block
  `content_block_start`, `content_block_delta` (text_delta, thinking_delta, signature_delta,
  input_json_delta), `content_block_stop` (a `ping` after the first block starts), then
  `message_delta` (stop_reason, usage) and `message_stop`.

With an empty queue the server answers `server.default_reply` (a short text), so a
long-running gateway test never hangs waiting for a scripted turn.

Later tests point the gateway at it through the config:

    providers.fake = {"api": "openai", "baseUrl": server.openai_base_url}
    (or {"api": "anthropic", "baseUrl": server.anthropic_base_url})
    model = {"provider": "fake", "id": "fake-model"}

No API key is needed: the registry accepts a missing key for a loopback base URL.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from dataclasses import replace
from http.server import BaseHTTPRequestHandler
from typing import Any
from typing import Literal

from tests.fakes.llm_turns import MAX_DELAY
from tests.fakes.llm_turns import ErrorReply
from tests.fakes.llm_turns import Hang
from tests.fakes.llm_turns import Part
from tests.fakes.llm_turns import RawBody
from tests.fakes.llm_turns import RawStream
from tests.fakes.llm_turns import Reply
from tests.fakes.llm_turns import StreamError
from tests.fakes.llm_turns import Text
from tests.fakes.llm_turns import Thinking
from tests.fakes.llm_turns import ToolCall
from tests.fakes.llm_turns import Turn
from tests.fakes.llm_turns import reply
from tests.fakes.prompt_cache import CacheUsage
from tests.fakes.prompt_cache import PromptCache
from tests.fakes.prompt_cache import TooManyBreakpoints
from tests.fakes.quiet_http import QuietHTTPServer

# the scripted turns are defined in llm_turns.py; tests import them from here too
__all__ = ["ErrorReply", "FakeLLMServer", "Hang", "RawBody", "RawStream", "RecordedRequest", "Reply",
           "StreamError", "Text", "Thinking", "ToolCall", "Turn", "fake_llm_server", "reply"]  # fmt: skip
HANG_LIMIT = 30.0  # a Hang turn is released at server close, or after this at the latest


@dataclass
class RecordedRequest:
    api: Literal["openai", "anthropic"]
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    cache_usage: CacheUsage | None = None  # with `prompt_cache` set: what it answered
    size: int = 0  # the request body's bytes as sent (bench/huge_message.py adds them up)


_OPENAI_FINISH = {"stop": "stop", "toolUse": "tool_calls", "length": "length"}
_ANTHROPIC_STOP = {"stop": "end_turn", "toolUse": "tool_use", "length": "max_tokens"}
_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


class FakeLLMServer:
    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self.default_reply: Reply = reply("This is the fake model's default reply.")
        # set: answers what the queue does not, per request (the failover bench's chaos)
        self.choose: Callable[[RecordedRequest], Turn] | None = None
        # what GET .../models lists (both APIs); with `api_key` set, other keys get 401
        self.models: list[str] = ["fake-small", "fake-large"]
        self.api_key: str | None = None
        # Ollama's POST /api/show: model name -> the JSON answered (404 for other names);
        # `show_requests` are the bodies asked, `show_headers` their headers
        self.show: dict[str, Any] = {}
        self.show_requests: list[dict[str, Any]] = []
        self.show_headers: list[dict[str, str]] = []
        # set: Anthropic usage comes from the request's cache breakpoints (prompt_cache.py)
        self.prompt_cache: PromptCache | None = None
        self._queue: deque[Turn] = deque()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._httpd = _Server(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self.port: int = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.openai_base_url = f"{self.url}/v1"
        self.anthropic_base_url = self.url
        # a short poll interval: shutdown() waits for it, at every test's teardown
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def enqueue(self, *turns: Turn) -> None:
        with self._lock:
            self._queue.extend(turns)

    @property
    def pending(self) -> int:
        """Scripted turns not yet answered."""
        with self._lock:
            return len(self._queue)

    @property
    def last_body(self) -> dict[str, Any]:
        with self._lock:
            return self.requests[-1].body

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _record_and_pop(self, request: RecordedRequest) -> Turn:
        with self._lock:
            self.requests.append(request)
            if self._queue:
                return self._queue.popleft()
        return self.choose(request) if self.choose is not None else self.default_reply


@contextmanager
def fake_llm_server() -> Iterator[FakeLLMServer]:
    server = FakeLLMServer()
    server.start()
    try:
        yield server
    finally:
        server.close()


class _Server(QuietHTTPServer):
    # the default backlog (5) resets connections when a crowd of runs calls at once
    # (bench/crowd.py): a real API's front takes them all
    request_queue_size = 256


def _handler_for(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        owner = server

    return Handler


class _Handler(BaseHTTPRequestHandler):
    owner: FakeLLMServer
    protocol_version = "HTTP/1.1"  # keep-alive and chunked bodies, as real APIs use
    # TCP_NODELAY, as real APIs' servers stream: with Nagle's algorithm the reply's later
    # chunks waited for the client's delayed ACK, about 40 ms a model call, so an
    # "instant" model stalled mid-reply (tests took that much longer per turn, and the
    # gateway woke twice for each reply in bench/turn_profile.py)
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if not path.endswith("/models"):
            self._send_json(404, {"error": {"message": f"no route {path}", "type": "not_found"}})
            return
        given = self.headers.get("x-api-key") or self.headers.get("Authorization", "")
        if self.owner.api_key is not None and self.owner.api_key not in given:
            error = {"type": "authentication_error", "message": "invalid x-api-key"}
            self._send_json(401, {"type": "error", "error": error})
            return
        ids = list(self.owner.models)
        if self.headers.get("anthropic-version"):  # the Anthropic SDK's list shape
            data = [{"type": "model", "id": i, "display_name": i, "created_at": "2026-01-01T00:00:00Z"}
                    for i in ids]  # fmt: skip
            first, last = (ids[0], ids[-1]) if ids else (None, None)
            self._send_json(200, {"data": data, "has_more": False, "first_id": first,
                                  "last_id": last})  # fmt: skip
            return
        data = [{"id": i, "object": "model", "created": 0, "owned_by": "fake"} for i in ids]
        self._send_json(200, {"object": "list", "data": data})

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        api: Literal["openai", "anthropic"]
        if path == "/api/show":
            self._show()
            return
        if path.endswith("/chat/completions"):
            api = "openai"
        elif path.endswith("/messages"):
            api = "anthropic"
        else:
            self._send_json(404, {"error": {"message": f"no route {path}", "type": "not_found"}})
            return
        length = int(self.headers.get("content-length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        cache, refused = self.owner.prompt_cache, None
        usage = None
        if api == "anthropic" and cache is not None:
            try:
                usage = cache.usage(body)
            except TooManyBreakpoints as exc:
                refused = ErrorReply(400, str(exc))
        recorded = RecordedRequest(api, path, dict(self.headers), body, usage, length)
        turn = self.owner._record_and_pop(recorded)
        if refused is not None:
            turn = refused
        elif usage is not None and isinstance(turn, Reply):
            turn = _with_cache_usage(turn, usage)
        if isinstance(turn, Hang):
            self.owner._closing.wait(HANG_LIMIT)
            self.close_connection = True
        elif isinstance(turn, ErrorReply):
            self._send_error(api, turn)
        elif isinstance(turn, RawStream):
            self._stream(Reply(()), iter(_sse(event) for event in turn.events))
        elif isinstance(turn, RawBody):
            self._stream(Reply(()), iter([turn.text]))
        elif not body.get("stream"):
            self._send_json(
                200,
                _openai_completion(turn, body)
                if api == "openai"
                else _anthropic_message(turn, body),
            )
        else:
            events = (
                _openai_events(turn, body) if api == "openai" else _anthropic_events(turn, body)
            )
            self._stream(turn, events)

    def _show(self) -> None:
        """Ollama's model details: `model_info` holds `<arch>.context_length`."""
        length = int(self.headers.get("content-length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        with self.owner._lock:
            self.owner.show_requests.append(body)
            self.owner.show_headers.append(dict(self.headers))
        answer = self.owner.show.get(str(body.get("model")))
        if answer is None:
            self._send_json(404, {"error": f"model '{body.get('model')}' not found"})
        elif isinstance(answer, str):  # a body that is not JSON
            self._send_raw(200, answer, {})
        else:
            self._send_json(200, answer)

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(payload), headers or {})

    def _send_raw(self, status: int, text: str, headers: dict[str, str]) -> None:
        data = text.encode()
        self.send_response(status)
        lowered = {name.lower() for name in headers}
        if "content-type" not in lowered:  # a proxy's HTML error page brings its own
            self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, api: str, turn: ErrorReply) -> None:
        if turn.body is not None:
            self._send_raw(turn.status, turn.body, turn.headers)
            return
        if api == "openai":
            error_type = turn.type or (
                "server_error" if turn.status >= 500 else "invalid_request_error"
            )
            payload: dict[str, Any] = {
                "error": {
                    "message": turn.message,
                    "type": error_type,
                    "param": None,
                    "code": turn.code,
                }
            }
        else:
            error_type = turn.type or _ANTHROPIC_ERROR_TYPES.get(turn.status, "api_error")
            payload = {"type": "error", "error": {"type": error_type, "message": turn.message}}
        self._send_json(turn.status, payload, turn.headers)

    def _stream(self, turn: Reply, events: Iterator[str]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        try:
            for event in events:
                if turn.delay:
                    time.sleep(min(turn.delay, MAX_DELAY))
                data = event.encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
            if turn.end == "aborted":
                self.close_connection = True  # dropped without the final chunk
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client went away (a cancelled stream)


def _sse(data: Any, event: str | None = None) -> str:
    payload = data if isinstance(data, str) else json.dumps(data)
    return (f"event: {event}\n" if event else "") + f"data: {payload}\n\n"


# -- OpenAI chat completions -----------------------------------------------------------


def _openai_events(turn: Reply, body: dict[str, Any]) -> Iterator[str]:
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    base = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model", "fake-model"),
        "system_fingerprint": "fp_fake",
        "service_tier": "default",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        extra = {"usage": None} if include_usage else {}
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return _sse({**base, "choices": [choice], **extra})

    yield chunk({"role": "assistant", "content": "", "refusal": None})
    call_index = 0
    for part in turn.parts:
        if isinstance(part, Text):
            yield chunk({"content": part.text})
        elif isinstance(part, Thinking):
            yield chunk({"reasoning_content": part.text})
        elif isinstance(part, ToolCall):
            yield from _openai_tool_call(chunk, part, call_index)
            call_index += 1
        else:
            yield _sse(
                {"error": {"message": part.message, "type": part.type, "param": None, "code": None}}
            )
            return
    if turn.end in ("truncated", "aborted"):
        return
    if turn.end == "malformed":
        yield "data: {this is not json\n\n"
        return
    yield chunk({}, _OPENAI_FINISH.get(turn.stop_reason(), turn.stop_reason()))
    if include_usage:
        yield _sse({**base, "choices": [], "usage": _openai_usage(turn)})
    yield "data: [DONE]\n\n"


def _openai_tool_call(chunk: Any, call: ToolCall, index: int) -> Iterator[str]:
    opening = {
        "index": index,
        "id": call.id or f"call_{index}",
        "type": "function",
        "function": {"name": call.name, "arguments": ""},
    }
    yield chunk({"tool_calls": [opening]})
    for fragment in call.fragments():
        yield chunk({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})


def _openai_usage(turn: Reply) -> dict[str, Any]:
    prompt, completion = turn.usage
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": turn.cache_read, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }


def _openai_completion(turn: Reply, body: dict[str, Any]) -> dict[str, Any]:
    calls = [p for p in turn.parts if isinstance(p, ToolCall)]
    message: dict[str, Any] = {
        "role": "assistant",
        "content": "".join(p.text for p in turn.parts if isinstance(p, Text)) or None,
    }
    if calls:
        message["tool_calls"] = [
            {
                "id": call.id or f"call_{i}",
                "type": "function",
                "function": {"name": call.name, "arguments": "".join(call.fragments())},
            }
            for i, call in enumerate(calls)
        ]
    finish = _OPENAI_FINISH.get(turn.stop_reason(), turn.stop_reason())
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fake-model"),
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": _openai_usage(turn),
    }


# -- Anthropic messages ----------------------------------------------------------------


def _anthropic_blocks(turn: Reply) -> list[list[Part]]:
    """Parts grouped into content blocks: consecutive text (or thinking) parts are the
    deltas of one block; each tool call and each error is its own."""
    blocks: list[list[Part]] = []
    for part in turn.parts:
        last = blocks[-1] if blocks else None
        if last and isinstance(part, Text | Thinking) and type(last[0]) is type(part):
            last.append(part)
        else:
            blocks.append([part])
    return blocks


def _with_cache_usage(turn: Reply, usage: CacheUsage) -> Reply:
    output = turn.usage[1]
    return replace(turn, usage=(usage.input_tokens, output), cache_read=usage.cache_read,
                   cache_write=usage.cache_write)  # fmt: skip


def _anthropic_events(turn: Reply, body: dict[str, Any]) -> Iterator[str]:
    prompt, completion = turn.usage
    message = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "fake-model"),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": prompt,
            "cache_creation_input_tokens": turn.cache_write,
            "cache_read_input_tokens": turn.cache_read,
            "output_tokens": 1,
        },
    }
    yield _sse({"type": "message_start", "message": message}, "message_start")
    calls = 0
    for index, block in enumerate(_anthropic_blocks(turn)):
        first = block[0]
        if isinstance(first, StreamError):
            error = {"type": "error", "error": {"type": first.type, "message": first.message}}
            yield _sse(error, "error")
            return
        yield from _anthropic_block(index, block, calls)
        calls += isinstance(first, ToolCall)
    if turn.end in ("truncated", "aborted"):
        return
    if turn.end == "malformed":
        yield "event: message_delta\ndata: {this is not json\n\n"
        return
    stop = _ANTHROPIC_STOP.get(turn.stop_reason(), turn.stop_reason())
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": None},
        "usage": {"output_tokens": completion},
    }
    yield _sse(delta, "message_delta")
    yield _sse({"type": "message_stop"}, "message_stop")


def _anthropic_block(index: int, block: list[Part], call_number: int) -> Iterator[str]:
    first = block[0]
    deltas: list[dict[str, Any]]
    if isinstance(first, Text):
        start: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p.text} for p in block if isinstance(p, Text)]
    elif isinstance(first, Thinking):
        start = {"type": "thinking", "thinking": ""}
        thoughts = [p for p in block if isinstance(p, Thinking)]
        deltas = [{"type": "thinking_delta", "thinking": p.text} for p in thoughts]
        signature = next((p.signature for p in reversed(thoughts) if p.signature), None)
        if signature:
            deltas.append({"type": "signature_delta", "signature": signature})
    else:
        assert isinstance(first, ToolCall)
        call_id = first.id or f"toolu_{call_number}"
        start = {"type": "tool_use", "id": call_id, "name": first.name, "input": {}}
        fragments = ["", *first.fragments()]  # the API opens with an empty partial_json
        deltas = [{"type": "input_json_delta", "partial_json": f} for f in fragments]
    yield _sse(
        {"type": "content_block_start", "index": index, "content_block": start},
        "content_block_start",
    )
    if index == 0:
        yield _sse({"type": "ping"}, "ping")  # where the API sends its first ping
    for delta in deltas:
        event = {"type": "content_block_delta", "index": index, "delta": delta}
        yield _sse(event, "content_block_delta")
    yield _sse({"type": "content_block_stop", "index": index}, "content_block_stop")


def _anthropic_message(turn: Reply, body: dict[str, Any]) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for number, block in enumerate(
        b for b in _anthropic_blocks(turn) if isinstance(b[0], ToolCall)
    ):
        call = block[0]
        assert isinstance(call, ToolCall)
        arguments = json.loads("".join(call.fragments()) or "{}")
        content.append(
            {
                "type": "tool_use",
                "id": call.id or f"toolu_{number}",
                "name": call.name,
                "input": arguments,
            }
        )
    text = "".join(p.text for p in turn.parts if isinstance(p, Text))
    if text:
        content.insert(0, {"type": "text", "text": text})
    prompt, completion = turn.usage
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "fake-model"),
        "content": content,
        "stop_reason": _ANTHROPIC_STOP.get(turn.stop_reason(), turn.stop_reason()),
        "stop_sequence": None,
        "usage": {"input_tokens": prompt, "output_tokens": completion},
    }
