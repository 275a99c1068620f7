"""The Provider protocol, the request it takes and the events it streams.

A provider turns a `ModelRequest` into an async stream of normalised events: text and
thinking deltas, tool calls (start, argument fragments, end), usage and a final stop
event. `AssistantBuilder` folds such a stream into the canonical assistant message
(gsv_core.protocol.messages), so the agent loop never sees a vendor's shapes.

Failures are raised as gsv errors: ProviderFailed (502, with the provider's message),
RateLimited (429, after the adapter's own bounded retries), ContextOverflow (the request
does not fit), TimedOut (504).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from collections.abc import Callable
from collections.abc import Hashable
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import Protocol
from typing import TypeVar

from gsv_core.errors import ProviderFailed
from gsv_core.protocol.messages import STOP_END
from gsv_core.protocol.messages import AssistantMessage
from gsv_core.protocol.messages import Message
from gsv_core.protocol.messages import TextBlock
from gsv_core.protocol.messages import ThinkingBlock
from gsv_core.protocol.messages import ToolCallBlock
from gsv_core.protocol.messages import Usage
from gsv_core.protocol.messages import empty_usage

THINKING_LEVELS = ("none", "minimal", "low", "medium", "high", "xhigh")

T = TypeVar("T")


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model sees it: name, description, JSON-schema parameters."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass
class ModelRequest:
    model: str
    system: str
    messages: list[Message]  # images inline (`data`), never `mediaPath` references
    tools: list[ToolSpec] = field(default_factory=list)
    thinking: str = "none"  # one of THINKING_LEVELS
    max_tokens: int | None = None
    # stable for one conversation, opaque: providers that route by it keep its cache warm
    cache_key: str | None = None
    # the conversation's memo of what each message became on the wire at its earlier
    # calls (None: nothing kept, each message is encoded again)
    memo: MessageMemo | None = field(default=None, compare=False, repr=False)


class MessageMemo(Protocol):
    """A value computed once per history message and kept between one conversation's
    model calls (agent/per_message.py implements it): stored messages never change in
    place, so a value of one holds while it is passed. A provider keeps its wire form of
    each message in it, so a turn does not convert and encode the whole history again."""

    def each(
        self, messages: list[Any], compute: Callable[[Any], T], inputs: Hashable = None
    ) -> list[T]:
        """`compute(message)` of each message, kept from the last call with the same
        `inputs` (a provider's wire format)."""
        ...


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ThinkingDelta:
    text: str
    signature: str | None = None


@dataclass(frozen=True)
class ToolCallStart:
    index: int
    id: str
    name: str


@dataclass(frozen=True)
class ToolCallDelta:
    index: int
    arguments: str  # a fragment of the JSON arguments


@dataclass(frozen=True)
class ToolCallEnd:
    index: int


@dataclass(frozen=True)
class UsageReport:
    usage: Usage


@dataclass(frozen=True)
class TextRetracted:
    """The text streamed so far was not answer text: it was a tool call written as text
    (text_tool_calls.py), which follows as ToolCall events."""


@dataclass(frozen=True)
class Stop:
    reason: str  # STOP_END, STOP_TOOL_USE, STOP_LENGTH, or the provider's own word


StreamEvent = (
    TextDelta
    | ThinkingDelta
    | ToolCallStart
    | ToolCallDelta
    | ToolCallEnd
    | UsageReport
    | TextRetracted
    | Stop
)


class Provider(Protocol):
    """One LLM API. `name` is the config's provider name (e.g. "anthropic", "ollama")."""

    name: str

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]: ...


@dataclass
class _PendingCall:
    id: str
    name: str
    arguments: list[str] = field(default_factory=list)


class AssistantBuilder:
    """Folds stream events into an AssistantMessage, in the order the parts arrived."""

    def __init__(self, provider: str, model: str) -> None:
        self.provider = provider
        self.model = model
        self._blocks: list[TextBlock | ThinkingBlock | ToolCallBlock | _PendingCall] = []
        self._calls: dict[int, _PendingCall] = {}
        self.usage: Usage = empty_usage()
        self.stop_reason: str | None = None

    def add(self, event: StreamEvent) -> None:
        if isinstance(event, TextDelta):
            self._append_text("text", event.text)
        elif isinstance(event, ThinkingDelta):
            self._append_thinking(event)
        elif isinstance(event, ToolCallStart):
            call = _PendingCall(event.id, event.name)
            self._calls[event.index] = call
            self._blocks.append(call)
        elif isinstance(event, ToolCallDelta):
            self._call(event.index).arguments.append(event.arguments)
        elif isinstance(event, UsageReport):
            self.usage = event.usage
        elif isinstance(event, Stop):
            self.stop_reason = event.reason
        elif isinstance(event, TextRetracted):
            self._blocks = [b for b in self._blocks if not _is_text(b)]

    def streamed_chars(self) -> int:
        """The characters of text, thinking and call arguments streamed so far."""
        size = 0
        for block in self._blocks:
            if isinstance(block, _PendingCall):
                size += len(block.name) + sum(map(len, block.arguments))
            else:
                size += len(str(block.get("text") or block.get("thinking") or ""))
        return size

    def _call(self, index: int) -> _PendingCall:
        call = self._calls.get(index)
        if call is None:
            raise ProviderFailed(f"malformed stream: arguments for unknown tool call {index}")
        return call

    def _append_text(self, kind: str, text: str) -> None:
        last = self._blocks[-1] if self._blocks else None
        if isinstance(last, dict) and last.get("type") == kind == "text":
            last["text"] += text  # type: ignore[typeddict-item]
        else:
            self._blocks.append({"type": "text", "text": text})

    def _append_thinking(self, event: ThinkingDelta) -> None:
        last = self._blocks[-1] if self._blocks else None
        if isinstance(last, dict) and last.get("type") == "thinking":
            last["thinking"] += event.text  # type: ignore[typeddict-item]
            if event.signature:
                last["signature"] = event.signature  # type: ignore[typeddict-unknown-key]
            return
        block: ThinkingBlock = {"type": "thinking", "thinking": event.text}
        if event.signature:
            block["signature"] = event.signature
        self._blocks.append(block)

    def message(self, timestamp: int) -> AssistantMessage:
        """The finished message; tool-call arguments must be complete JSON objects."""
        content: list[TextBlock | ThinkingBlock | ToolCallBlock] = []
        for block in self._blocks:
            if isinstance(block, _PendingCall):
                content.append(_finish_call(block))
            elif block.get("type") != "text" or block.get("text"):
                content.append(block)
        return {
            "role": "assistant",
            "content": content,
            "provider": self.provider,
            "model": self.model,
            "usage": self.usage,
            "stopReason": self.stop_reason or STOP_END,
            "timestamp": timestamp,
        }


def _is_text(block: object) -> bool:
    return isinstance(block, dict) and block.get("type") == "text"


def _finish_call(call: _PendingCall) -> ToolCallBlock:
    raw = "".join(call.arguments).strip() or "{}"
    try:
        arguments = json.loads(raw)
    except ValueError:
        raise ProviderFailed(
            f"malformed stream: tool call {call.name} has invalid JSON arguments"
        ) from None
    if not isinstance(arguments, dict):
        raise ProviderFailed(f"malformed stream: tool call {call.name} arguments are not an object")
    return {"type": "toolCall", "id": call.id, "name": call.name, "arguments": arguments}
