"""The OpenAI-compatible provider: OpenAI itself and every server speaking its
chat-completions API (OpenRouter, Gemini's compatible endpoint, Ollama, vLLM, LM Studio),
through the official `openai` SDK, imported only when a request is made.

It posts the request's body (chat_request.py: canonical messages as chat messages,
`stream: true`) through the SDK's client (its HTTP, status errors and auth) and reads the
response's server-sent events itself (sse.py: plain JSON, not a pydantic model per
chunk), turning the chunks into gsv stream events; failures become gsv errors (see
retry.py).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from contextlib import aclosing
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from gsv_core import heap
from gsv_core.errors import GsvError
from gsv_core.errors import ProviderFailed
from gsv_core.protocol.messages import STOP_END
from gsv_core.protocol.messages import STOP_LENGTH
from gsv_core.protocol.messages import STOP_TOOL_USE
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
from gsv_core.providers.chat_request import ToolsJson
from gsv_core.providers.chat_request import chat_body
from gsv_core.providers.retry import AttemptFailed
from gsv_core.providers.retry import looks_like_overflow
from gsv_core.providers.retry import malformed
from gsv_core.providers.retry import overflow
from gsv_core.providers.retry import retry_after
from gsv_core.providers.retry import short
from gsv_core.providers.retry import status_failure
from gsv_core.providers.retry import truncated
from gsv_core.providers.sdk import SdkProvider
from gsv_core.providers.sse import SseDecoder
from gsv_core.providers.sse import lines

COMPLETIONS_PATH = "/chat/completions"  # under the client's base URL, as the SDK posts it

_STOP_REASONS = {
    "stop": STOP_END,
    "tool_calls": STOP_TOOL_USE,
    "function_call": STOP_TOOL_USE,
    "length": STOP_LENGTH,
}


@dataclass(eq=False)
class OpenAICompatProvider(SdkProvider):
    """A provider speaking OpenAI chat completions at `base_url`."""

    # the tools' JSON, kept for the next call (the pool keeps one provider per settings)
    _tools_json: ToolsJson = field(default_factory=ToolsJson, init=False, repr=False)

    def request_params(self, request: ModelRequest) -> bytes:
        cache_key = request.cache_key if self.prompt_cache_key else None
        return chat_body(request, self._tools_json, cache_key)

    def _new_client(self) -> Any:
        import openai

        heap.loaded("openai")
        return self._sdk_client(openai.AsyncOpenAI, openai.DefaultAioHttpClient)

    async def _attempt(self, body: bytes) -> AsyncGenerator[StreamEvent, None]:
        import httpx2
        import openai

        errors = (openai.OpenAIError, httpx2.HTTPError)
        async with self._client_for_attempt() as client, AsyncExitStack() as stack:
            try:
                # the SDK's HTTP, auth and status errors for a body encoded already
                # (chat_request.py): `chat.completions.create` would walk it against the
                # typed parameters first, a tenth of the request's CPU, then encode it all
                response = await client.post(
                    COMPLETIONS_PATH, cast_to=httpx2.Response, content=body, stream=True
                )
            except openai.OpenAIError as exc:
                raise self._failure(exc, streaming=False) from exc
            stack.push_async_callback(response.aclose)
            # the raw body (sse.py), not the SDK's stream of pydantic chunks; closed here,
            # in this task, if the reader stops early
            async with aclosing(self._chunks(lines(response.aiter_bytes()))) as chunks:
                async for event in self._read(chunks, ChunkReader(self.name), errors):
                    yield event

    async def _chunks(self, body_lines: AsyncIterator[str]) -> AsyncGenerator[Any, None]:
        """The JSON chunks of a streamed completion, up to `[DONE]`; an `{"error": ...}`
        chunk raises (as the SDK's stream does)."""
        decoder = SseDecoder()
        done = False
        async for line in body_lines:
            event = decoder.line(line)
            if event is None or done:
                continue  # after [DONE]: read on, so the connection can be reused
            if event.data.startswith("[DONE]"):
                done = True
                continue
            chunk = json.loads(event.data)
            if isinstance(chunk, dict) and chunk.get("error"):
                raise self._stream_error(chunk["error"])
            yield chunk
        last = decoder.end()
        if last is not None and not done and not last.data.startswith("[DONE]"):
            yield json.loads(last.data)

    def _sdk(self) -> Any:
        import openai

        return openai

    def _status_failure(self, exc: Any, *, streaming: bool) -> Exception:
        detail = _detail(exc.body, exc.message)
        if exc.code == "context_length_exceeded" or (
            exc.status_code in (400, 413, 422) and looks_like_overflow(detail)
        ):
            return overflow(self.name, detail)
        if exc.status_code == 429 and exc.code == "insufficient_quota":
            # out of credit: retrying cannot help
            return ProviderFailed(
                f"{self.name} refused the request: quota exhausted ({detail})", retryable=False
            )
        return status_failure(
            self.name, exc.status_code, detail, retry_after(exc.response.headers, self.retry.now)
        )

    def _stream_error(self, error: Any) -> GsvError | AttemptFailed:
        """The failure an `{"error": ...}` chunk inside the stream stands for."""
        fields = error if isinstance(error, dict) else {}
        message = fields.get("message")
        if not isinstance(message, str) or not message:
            message = "An error occurred during streaming"  # the SDK's words
        detail = _detail(error, message)
        kind = f"{fields.get('code') or ''} {fields.get('type') or ''}"
        if "context_length" in kind or looks_like_overflow(detail):
            return overflow(self.name, detail)
        failed = ProviderFailed(f"{self.name} failed mid-stream: {detail}")
        return AttemptFailed(failed)  # a retry helps if nothing was streamed yet


def _detail(body: object, fallback: str) -> str:
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return short(body["message"])
    if isinstance(body, str) and body.strip():
        return short(body)
    return short(fallback)


# -- stream mapping ----------------------------------------------------------------------


@dataclass
class _Call:
    id: str | None = None
    name: str | None = None
    started: bool = False
    ended: bool = False
    pending: list[str] = field(default_factory=list)  # arguments seen before the name


class ChunkReader:
    """Turns `chat.completion.chunk` JSON objects into stream events (choice 0 only).
    Servers differ, so every field is read defensively; a chunk that is not an object,
    or a field of the wrong kind, fails as a malformed stream (sdk.py `_read`)."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.calls: dict[int, _Call] = {}
        self.finish_reason: str | None = None

    def feed(self, chunk: dict[str, Any]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) == 0:
                events.extend(self._choice(choice))
        usage = chunk.get("usage")
        if usage:
            events.append(UsageReport(_usage(usage)))
        return events

    def _choice(self, choice: dict[str, Any]) -> list[StreamEvent]:
        # some servers send `"delta": null` along with the finish reason
        delta = choice.get("delta")
        events = self._delta(delta) if delta is not None else []
        finish_reason = choice.get("finish_reason")
        if finish_reason:
            self.finish_reason = str(finish_reason)
            events.extend(self._end_calls())
        return events

    def _delta(self, delta: dict[str, Any]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        # reasoning text: `reasoning_content` (DeepSeek, vLLM) or `reasoning` (OpenRouter, Ollama)
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            events.append(ThinkingDelta(reasoning))
        content = delta.get("content")
        if isinstance(content, str) and content:
            events.append(TextDelta(content))
        for fragment in delta.get("tool_calls") or []:
            events.extend(self._tool_fragment(fragment))
        return events

    def _tool_fragment(self, fragment: dict[str, Any]) -> list[StreamEvent]:
        # some servers omit `index` (each fragment is then a whole call), `id` or `function`
        index = fragment.get("index")
        if not isinstance(index, int):
            index = len(self.calls)
        call = self.calls.setdefault(index, _Call())
        function = fragment.get("function") or {}
        call.id = call.id or _text(fragment.get("id"))
        call.name = call.name or _text(function.get("name"))
        arguments = _text(function.get("arguments"))
        events: list[StreamEvent] = []
        if not call.started and call.name:
            call.started = True
            events.append(ToolCallStart(index, call.id or f"call_{index}", call.name))
            if call.pending:
                events.append(ToolCallDelta(index, "".join(call.pending)))
        if arguments:
            if call.started:
                events.append(ToolCallDelta(index, arguments))
            else:
                call.pending.append(arguments)
        return events

    def _end_calls(self) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        for index, call in self.calls.items():
            if not call.started:
                raise malformed(self.provider, f"tool call {index} has no name")
            if not call.ended:
                call.ended = True
                events.append(ToolCallEnd(index))
        return events

    def finish(self) -> list[StreamEvent]:
        """The closing events; a stream without a finish reason was cut short."""
        if self.finish_reason is None:
            raise truncated(self.provider)
        reason = _STOP_REASONS.get(self.finish_reason, self.finish_reason)
        if reason == STOP_END and self.calls:
            reason = STOP_TOOL_USE  # some servers (Ollama) say "stop" after tool calls
        return [*self._end_calls(), Stop(reason)]


def _usage(raw: dict[str, Any]) -> Usage:
    prompt = raw.get("prompt_tokens") or 0
    completion = raw.get("completion_tokens") or 0
    usage: Usage = {
        "input": prompt,
        "output": completion,
        "total": raw.get("total_tokens") or prompt + completion,
    }
    details = raw.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    if cached:
        usage["cacheRead"] = cached
    return usage


def _text(value: Any) -> str | None:
    """A string field, or None for a missing one; another kind is a malformed chunk."""
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"expected a string, got {type(value).__name__}")
