"""The Anthropic provider: the Messages API through the official `anthropic` SDK, imported
only when a request is made.

It maps canonical messages to Messages API content blocks, streams the raw events of
`messages.create(stream=True)` and turns them into gsv stream events; failures become gsv
errors (see retry.py). Thinking levels become an extended-thinking token budget.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from gsv_core import heap
from gsv_core.protocol.messages import STOP_END
from gsv_core.protocol.messages import STOP_LENGTH
from gsv_core.protocol.messages import STOP_TOOL_USE
from gsv_core.protocol.messages import AssistantMessage
from gsv_core.protocol.messages import ImageBlock
from gsv_core.protocol.messages import Message
from gsv_core.protocol.messages import TextBlock
from gsv_core.protocol.messages import ToolResultMessage
from gsv_core.protocol.messages import Usage
from gsv_core.providers.base import ModelRequest
from gsv_core.providers.base import Stop
from gsv_core.providers.base import StreamEvent
from gsv_core.providers.base import TextDelta
from gsv_core.providers.base import ThinkingDelta
from gsv_core.providers.base import ToolCallDelta
from gsv_core.providers.base import ToolCallEnd
from gsv_core.providers.base import ToolCallStart
from gsv_core.providers.base import UsageReport
from gsv_core.providers.retry import looks_like_overflow
from gsv_core.providers.retry import malformed
from gsv_core.providers.retry import overflow
from gsv_core.providers.retry import retry_after
from gsv_core.providers.retry import short
from gsv_core.providers.retry import status_failure
from gsv_core.providers.retry import truncated
from gsv_core.providers.sdk import SdkProvider
from gsv_core.providers.sdk import split_plain_json

# The API requires max_tokens; this is the room for the visible answer.
DEFAULT_MAX_TOKENS = 8192

# Extended-thinking budget per thinking level, in tokens (the API's minimum is 1024).
# Thinking counts against max_tokens, so the budget is added on top of the answer's room.
THINKING_BUDGETS = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "xhigh": 32768,
}

# Prompt caching (docs.anthropic.com, "Prompt caching"): a breakpoint caches the prefix
# tools -> system -> messages up to the block that carries it; at most four per request.
# Two go on the tools and the system prompt, two on the conversation.
CACHED = {"type": "ephemeral"}
CONVERSATION_BREAKPOINTS = 2

_STOP_REASONS = {
    "end_turn": STOP_END,
    "stop_sequence": STOP_END,
    "tool_use": STOP_TOOL_USE,
    "max_tokens": STOP_LENGTH,
    "model_context_window_exceeded": STOP_LENGTH,
}

# error.type in a body or an in-stream `error` event, as the HTTP status it stands for
_STATUS_OF_ERROR_TYPE = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


class AnthropicProvider(SdkProvider):
    """A provider speaking the Anthropic Messages API at `base_url`."""

    def request_params(self, request: ModelRequest) -> dict[str, Any]:
        return messages_params(request)

    def _new_client(self) -> Any:
        import anthropic

        heap.loaded("anthropic")
        return self._sdk_client(anthropic.AsyncAnthropic, anthropic.DefaultAioHttpClient)

    async def _attempt(self, params: dict[str, Any]) -> AsyncGenerator[StreamEvent, None]:
        import anthropic
        import httpx2

        typed, plain = split_plain_json(params, ("messages", "tools", "system"))
        async with self._client_for_attempt() as client:
            try:
                events: Any = await client.messages.create(**typed, messages=[], extra_body=plain)
            except anthropic.AnthropicError as exc:
                raise self._failure(exc, streaming=False) from exc
            # unlike openai's, this SDK lets httpx errors through while a stream is read
            sdk_errors = (anthropic.AnthropicError, httpx2.HTTPError)
            async for event in self._read(events, EventReader(self.name), sdk_errors):
                yield event

    def _sdk(self) -> Any:
        import anthropic

        return anthropic

    def _status_failure(self, exc: Any, *, streaming: bool) -> Exception:
        detail = short(exc.api_message or _body_text(exc.body) or exc.message)
        status = exc.status_code
        if status == 200:  # an `error` event inside the stream
            status = _STATUS_OF_ERROR_TYPE.get(exc.type or "", 500)
        if status in (400, 413) and looks_like_overflow(detail):
            return overflow(self.name, detail)
        delay = None if streaming else retry_after(exc.response.headers, self.retry.now)
        return status_failure(self.name, status, detail, delay)


def _body_text(body: object) -> str:
    return body if isinstance(body, str) else ""


# -- request mapping ---------------------------------------------------------------------


def messages_params(request: ModelRequest) -> dict[str, Any]:
    """The keyword arguments of `messages.create` for a request."""
    max_tokens = request.max_tokens or DEFAULT_MAX_TOKENS
    params: dict[str, Any] = {
        "model": request.model,
        "max_tokens": max_tokens,
        "messages": anthropic_messages(request.messages),
        "stream": True,
    }
    if request.system:
        params["system"] = [{"type": "text", "text": request.system, "cache_control": CACHED}]
    if request.tools:
        params["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in request.tools
        ]
        params["tools"][-1]["cache_control"] = CACHED
    mark_conversation_prefix(params["messages"])
    budget = THINKING_BUDGETS.get(request.thinking)
    if budget:
        params["thinking"] = {"type": "enabled", "budget_tokens": budget}
        params["max_tokens"] = budget + max_tokens  # the budget must stay below max_tokens
    return params


def mark_conversation_prefix(messages: list[dict[str, Any]]) -> None:
    """Cache breakpoints on the last block of the last two user turns (tool results
    travel in user turns): the next request, one tool step or one message later, reads
    everything up to the newer one from cache, and the older one still matches when a
    step added more blocks than the API looks back (about 20)."""
    marked = 0
    for message in reversed(messages):
        if marked == CONVERSATION_BREAKPOINTS:
            return
        if message["role"] != "user":
            continue
        content = message["content"]
        if isinstance(content, str) and content:  # the API refuses empty text blocks
            message["content"] = content = [{"type": "text", "text": content}]
        if content and not isinstance(content, str):
            content[-1]["cache_control"] = CACHED
            marked += 1


def anthropic_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Canonical messages as Messages API messages. Tool results travel in user messages;
    consecutive results share one, as the API expects after a turn with several calls."""
    out: list[dict[str, Any]] = []
    results: list[dict[str, Any]] | None = None  # the tool_result blocks being collected
    for message in messages:
        if message["role"] == "toolResult":
            if results is None:
                results = []
                out.append({"role": "user", "content": results})
            results.append(_tool_result(message))
            continue
        results = None
        if message["role"] == "user":
            out.append({"role": "user", "content": _user_content(message["content"])})
        elif message["role"] == "assistant":
            blocks = _assistant_blocks(message)
            if blocks:  # the API refuses an empty assistant turn
                out.append({"role": "assistant", "content": blocks})
    return out


def _user_content(content: str | list[TextBlock | ImageBlock]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    return [b for b in (_content_block(block) for block in content) if b]


def _content_block(block: TextBlock | ImageBlock) -> dict[str, Any] | None:
    if block["type"] == "text":
        # the API refuses empty text blocks
        return {"type": "text", "text": block["text"]} if block["text"] else None
    data = block.get("data")
    if not data:
        return {"type": "text", "text": "[image not available]"}
    source = {"type": "base64", "media_type": block["mimeType"], "data": data}
    return {"type": "image", "source": source}


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in message["content"]:
        if block["type"] == "text" and block["text"]:
            blocks.append({"type": "text", "text": block["text"]})
        elif block["type"] == "thinking" and block.get("signature"):
            # Reasoning goes back with its signature (required after tool use); unsigned
            # thinking (another provider's) cannot be verified and is dropped.
            blocks.append(
                {"type": "thinking", "thinking": block["thinking"], "signature": block["signature"]}
            )
        elif block["type"] == "toolCall":
            blocks.append(
                {
                    "type": "tool_use",
                    "id": block["id"],
                    "name": block["name"],
                    "input": block["arguments"],
                }
            )
    return blocks


def _tool_result(message: ToolResultMessage) -> dict[str, Any]:
    result: dict[str, Any] = {"type": "tool_result", "tool_use_id": message["toolCallId"]}
    content = [b for b in (_content_block(block) for block in message["content"]) if b]
    if content:
        result["content"] = content
    if message["isError"]:
        result["is_error"] = True
    return result


# -- stream mapping ----------------------------------------------------------------------


class EventReader:
    """Turns raw Messages API stream events into gsv stream events.

    Usage is reported once, with `message_delta` (cumulative output), so that nothing is
    yielded before content arrives and an error right after `message_start` can still be
    retried.
    """

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.blocks: dict[int, str] = {}  # content block index -> block type
        self.counts: dict[str, int] = {}
        self.stop_reason: str | None = None
        self.stopped = False

    def feed(self, event: Any) -> list[StreamEvent]:
        kind = event.type
        if kind == "message_start":
            self._count(event.message.usage)
            return []
        if kind == "content_block_start":
            return self._block_start(event.index, event.content_block)
        if kind == "content_block_delta":
            return self._delta(event.index, event.delta)
        if kind == "content_block_stop":
            return [ToolCallEnd(event.index)] if self.blocks.get(event.index) == "tool_use" else []
        if kind == "message_delta":
            self.stop_reason = event.delta.stop_reason or self.stop_reason
            self._count(event.usage)
            return [UsageReport(self.usage())]
        if kind == "message_stop":
            self.stopped = True
            return [Stop(_STOP_REASONS.get(self.stop_reason or "end_turn", self.stop_reason or ""))]
        return []

    def _block_start(self, index: int, block: Any) -> list[StreamEvent]:
        self.blocks[index] = block.type
        if block.type == "tool_use":
            return [ToolCallStart(index, block.id, block.name)]
        if block.type == "text" and block.text:
            return [TextDelta(block.text)]
        if block.type == "thinking" and (block.thinking or getattr(block, "signature", None)):
            return [ThinkingDelta(block.thinking or "", getattr(block, "signature", None) or None)]
        # redacted_thinking has no place in the canonical message and is dropped
        return []

    def _delta(self, index: int, delta: Any) -> list[StreamEvent]:
        if delta.type == "text_delta":
            return [TextDelta(delta.text)] if delta.text else []
        if delta.type == "thinking_delta":
            return [ThinkingDelta(delta.thinking)] if delta.thinking else []
        if delta.type == "signature_delta":
            return [ThinkingDelta("", signature=delta.signature)]
        if delta.type == "input_json_delta":
            if self.blocks.get(index) != "tool_use":
                raise malformed(self.provider, f"tool arguments for block {index}, not a tool call")
            return [ToolCallDelta(index, delta.partial_json)] if delta.partial_json else []
        return []  # citations and future delta kinds

    def _count(self, usage: Any) -> None:
        for key in (
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ):
            value = getattr(usage, key, None)
            if isinstance(value, int):
                self.counts[key] = value

    def usage(self) -> Usage:
        """Input counts every prompt token: the API reports cache reads and writes apart
        from `input_tokens`."""
        cache_read = self.counts.get("cache_read_input_tokens", 0)
        cache_write = self.counts.get("cache_creation_input_tokens", 0)
        prompt = self.counts.get("input_tokens", 0) + cache_read + cache_write
        output = self.counts.get("output_tokens", 0)
        usage: Usage = {"input": prompt, "output": output, "total": prompt + output}
        if cache_read:
            usage["cacheRead"] = cache_read
        if cache_write:
            usage["cacheWrite"] = cache_write
        return usage

    def finish(self) -> list[StreamEvent]:
        if not self.stopped:
            raise truncated(self.provider)
        return []
