"""The turns a fake LLM server is scripted with (tests/fakes/llm_server.py): text,
thinking and tool-call parts, a whole streamed reply, an HTTP error, a hang, a raw stream."""

from __future__ import annotations

import json
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import Literal

MAX_DELAY = 1.0  # seconds between two events; keeps a scripted slow stream bounded


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Thinking:
    """Reasoning text; Anthropic signs it (signature_delta), OpenAI-compatible servers send
    it as `reasoning_content`."""

    text: str
    signature: str | None = None


@dataclass(frozen=True)
class ToolCall:
    """A tool call; `arguments` is either the JSON fragments exactly as they should be
    streamed, or a dict that is encoded and cut into three fragments."""

    name: str
    arguments: dict[str, Any] | list[str]
    id: str | None = None

    def fragments(self) -> list[str]:
        if isinstance(self.arguments, list):
            return self.arguments
        encoded = json.dumps(self.arguments)
        third = max(1, len(encoded) // 3)
        return [encoded[:third], encoded[third : 2 * third], encoded[2 * third :]]


@dataclass(frozen=True)
class StreamError:
    """An error event inside an otherwise successful (HTTP 200) stream; the stream ends."""

    message: str = "Overloaded"
    type: str = "overloaded_error"


Part = Text | Thinking | ToolCall | StreamError
End = Literal["complete", "truncated", "aborted", "malformed"]


@dataclass(frozen=True)
class Reply:
    """One streamed model turn.

    `stop` is "stop" | "toolUse" | "length" (default: toolUse when there are tool calls).
    `end`: "complete"; "truncated" (the body ends cleanly but without the finish event);
    "aborted" (the connection drops mid-body); "malformed" (a garbage event instead of the
    finish). `delay` seconds pass before each event (capped at MAX_DELAY).
    """

    parts: tuple[Part, ...]
    usage: tuple[int, int] = (10, 5)  # input, output tokens
    cache_read: int = 0
    cache_write: int = 0
    stop: str | None = None
    end: End = "complete"
    delay: float = 0.0

    def stop_reason(self) -> str:
        if self.stop:
            return self.stop
        return "toolUse" if any(isinstance(p, ToolCall) for p in self.parts) else "stop"


def reply(*parts: str | Part, **options: Any) -> Reply:
    """A Reply whose plain-string parts are text chunks."""
    return Reply(tuple(Text(p) if isinstance(p, str) else p for p in parts), **options)


@dataclass(frozen=True)
class ErrorReply:
    """An HTTP error answer. The body is the API's own error JSON (OpenAI
    `{"error":{message,type,code}}`, Anthropic `{"type":"error","error":{type,message}}`)
    unless `body` gives the raw text."""

    status: int
    message: str = "error"
    type: str | None = None  # API error type; a sensible default per status otherwise
    code: str | None = None  # OpenAI error code, e.g. "context_length_exceeded"
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None


@dataclass(frozen=True)
class Hang:
    """Hold the request open without answering (released when the server closes)."""


@dataclass(frozen=True)
class RawStream:
    """A 200 event stream whose SSE text is given verbatim, to imitate a quirky server.
    `events` are the `data:` payloads (dicts are JSON-encoded), each sent as one event."""

    events: tuple[dict[str, Any] | str, ...]


@dataclass(frozen=True)
class RawBody:
    """A 200 event stream whose body is `text` exactly (comments, field spellings, a
    missing last blank line: what no `RawStream` event can say)."""

    text: str


Turn = Reply | ErrorReply | Hang | RawStream | RawBody
