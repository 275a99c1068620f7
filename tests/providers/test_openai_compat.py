"""The OpenAI-compatible adapter, driven through the real `openai` SDK against the fake
LLM server: streaming, request mapping, retries and errors."""

from __future__ import annotations

import asyncio
import json
import re
import socket
from collections.abc import Iterator

import pytest

from gsv_core.errors import ContextOverflow
from gsv_core.errors import ProviderFailed
from gsv_core.errors import RateLimited
from gsv_core.errors import TimedOut
from gsv_core.protocol.messages import STOP_END
from gsv_core.protocol.messages import Message
from gsv_core.providers.base import ModelRequest
from gsv_core.providers.base import Stop
from gsv_core.providers.base import TextDelta
from gsv_core.providers.base import ThinkingDelta
from gsv_core.providers.base import ToolCallDelta
from gsv_core.providers.base import ToolCallEnd
from gsv_core.providers.base import ToolCallStart
from gsv_core.providers.base import UsageReport
from gsv_core.providers.openai_compat import OpenAICompatProvider
from gsv_core.providers.sse import MAX_BYTES
from tests.fakes.llm_server import ErrorReply
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import Hang
from tests.fakes.llm_server import RawBody
from tests.fakes.llm_server import RawStream
from tests.fakes.llm_server import StreamError
from tests.fakes.llm_server import Thinking
from tests.fakes.llm_server import ToolCall
from tests.fakes.llm_server import fake_llm_server
from tests.fakes.llm_server import reply
from tests.providers import PIXEL
from tests.providers import READ_TOOL
from tests.providers import ask
from tests.providers import assemble
from tests.providers import collect
from tests.providers import no_sleep_policy


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with fake_llm_server() as running:
        yield running


def provider_for(server: FakeLLMServer, **options: object) -> OpenAICompatProvider:
    policy = options.pop("retry", None) or no_sleep_policy()[0]
    return OpenAICompatProvider(
        "fake",
        base_url=server.openai_base_url,
        api_key="sk-test",
        llm_timeout=float(options.pop("llm_timeout", 10.0)),  # type: ignore[arg-type]
        retry=policy,  # type: ignore[arg-type]
    )


async def test_text_streams_as_several_deltas_in_order(server: FakeLLMServer) -> None:
    """Each content chunk arrives as its own TextDelta, in order, then usage and stop."""
    server.enqueue(reply("Hel", "lo, ", "world"))
    provider = provider_for(server)
    events = await collect(provider, ask())
    assert events == [
        TextDelta("Hel"),
        TextDelta("lo, "),
        TextDelta("world"),
        UsageReport({"input": 10, "output": 5, "total": 15}),
        Stop("stop"),
    ]
    assert assemble(provider, ask(), events)["content"] == [
        {"type": "text", "text": "Hello, world"}
    ]


async def test_tool_call_fragments_assemble_into_arguments(server: FakeLLMServer) -> None:
    """Argument fragments stream as ToolCallDeltas and fold into the parsed arguments."""
    fragments = ['{"pa', 'th": "no', 'tes.txt"}']
    server.enqueue(reply("Reading.", ToolCall("n1__Read", fragments, id="call_abc")))
    provider = provider_for(server)
    events = await collect(provider, ask(tools=[READ_TOOL]))
    assert events[1:6] == [
        ToolCallStart(0, "call_abc", "n1__Read"),
        *(ToolCallDelta(0, f) for f in fragments),
        ToolCallEnd(0),
    ]
    message = assemble(provider, ask(), events)
    assert message["stopReason"] == "toolUse"
    assert message["content"][1] == {
        "type": "toolCall",
        "id": "call_abc",
        "name": "n1__Read",
        "arguments": {"path": "notes.txt"},
    }


async def test_parallel_tool_calls_keep_their_ids_and_order(server: FakeLLMServer) -> None:
    """Two calls in one turn become two tool-call blocks with their own ids and arguments."""
    server.enqueue(
        reply(
            ToolCall("n1__Read", {"path": "a.txt"}, id="call_1"),
            ToolCall("n2__Read", {"path": "b.txt"}, id="call_2"),
        )
    )
    provider = provider_for(server)
    events = await collect(provider, ask())
    calls = [b for b in assemble(provider, ask(), events)["content"] if b["type"] == "toolCall"]
    assert [(c["id"], c["name"], c["arguments"]) for c in calls] == [
        ("call_1", "n1__Read", {"path": "a.txt"}),
        ("call_2", "n2__Read", {"path": "b.txt"}),
    ]
    assert [e for e in events if isinstance(e, ToolCallEnd)] == [ToolCallEnd(0), ToolCallEnd(1)]


async def test_usage_reports_prompt_completion_and_cached_tokens(server: FakeLLMServer) -> None:
    """The final usage chunk becomes input/output/total with cached prompt tokens as cacheRead."""
    server.enqueue(reply("ok", usage=(1200, 34), cache_read=1000))
    events = await collect(provider_for(server), ask())
    usage = [e.usage for e in events if isinstance(e, UsageReport)]
    assert usage == [{"input": 1200, "output": 34, "total": 1234, "cacheRead": 1000}]
    assert server.last_body["stream_options"] == {"include_usage": True}


async def test_reasoning_content_becomes_thinking(server: FakeLLMServer) -> None:
    """`reasoning_content` deltas of compatible servers become thinking, before the text."""
    server.enqueue(reply(Thinking("Let me "), Thinking("think."), "Answer."))
    provider = provider_for(server)
    events = await collect(provider, ask())
    assert events[:2] == [ThinkingDelta("Let me "), ThinkingDelta("think.")]
    assert assemble(provider, ask(), events)["content"] == [
        {"type": "thinking", "thinking": "Let me think."},
        {"type": "text", "text": "Answer."},
    ]


def conversation() -> list[Message]:
    """A history with an image, thinking, two tool calls, and a tool result with an image."""
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in these files?"},
                {"type": "image", "mimeType": "image/png", "data": PIXEL},
            ],
            "timestamp": 1,
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "I should read them.", "signature": "sig"},
                {"type": "text", "text": "Reading both."},
                {
                    "type": "toolCall",
                    "id": "call_a",
                    "name": "n1__Read",
                    "arguments": {"path": "a.txt"},
                },
                {
                    "type": "toolCall",
                    "id": "call_b",
                    "name": "n1__Read",
                    "arguments": {"path": "b.png"},
                },
            ],
            "provider": "fake",
            "model": "fake-model",
            "usage": {"input": 1, "output": 1, "total": 2},
            "stopReason": "toolUse",
            "timestamp": 2,
        },
        {
            "role": "toolResult",
            "toolCallId": "call_a",
            "toolName": "n1__Read",
            "content": [{"type": "text", "text": "hello"}],
            "isError": False,
            "timestamp": 3,
        },
        {
            "role": "toolResult",
            "toolCallId": "call_b",
            "toolName": "n1__Read",
            "content": [{"type": "image", "mimeType": "image/png", "data": PIXEL}],
            "isError": False,
            "timestamp": 4,
        },
        {"role": "user", "content": "Thanks", "timestamp": 5},
    ]


async def test_request_maps_system_history_images_and_tools(server: FakeLLMServer) -> None:
    """The SDK sends the system prompt first, images as data URLs, tool calls with JSON
    arguments, tool results as tool messages and a tool's image as a following user message."""
    request = ModelRequest(
        model="gpt-test", system="You are a test.", messages=conversation(), tools=[READ_TOOL]
    )
    await collect(provider_for(server), request)
    body = server.last_body
    image_part = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PIXEL}"}}
    assert body["model"] == "gpt-test"
    assert body["stream"] is True
    assert body["messages"] == [
        {"role": "system", "content": "You are a test."},
        {
            "role": "user",
            "content": [{"type": "text", "text": "What is in these files?"}, image_part],
        },
        {
            "role": "assistant",
            "content": "Reading both.",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "n1__Read", "arguments": '{"path": "a.txt"}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "n1__Read", "arguments": '{"path": "b.png"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "hello"},
        {
            "role": "tool",
            "tool_call_id": "call_b",
            "content": "(the tool returned 1 image(s), shown next)",
        },
        {
            "role": "user",
            "content": [{"type": "text", "text": "Images returned by n1__Read:"}, image_part],
        },
        {"role": "user", "content": "Thanks"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "n1__Read",
                "description": "Read a file",
                "parameters": READ_TOOL.parameters,
            },
        }
    ]
    assert "reasoning_effort" not in body
    assert "max_completion_tokens" not in body


@pytest.mark.parametrize(
    ("level", "effort"), [("minimal", "minimal"), ("medium", "medium"), ("xhigh", "high")]
)
async def test_thinking_level_becomes_reasoning_effort(
    server: FakeLLMServer, level: str, effort: str
) -> None:
    """A thinking level is sent as reasoning_effort (xhigh capped at high), max_tokens as
    max_completion_tokens."""
    await collect(provider_for(server), ask(thinking=level, max_tokens=500))
    assert server.last_body["reasoning_effort"] == effort
    assert server.last_body["max_completion_tokens"] == 500


async def test_rate_limit_waits_retry_after_then_succeeds(server: FakeLLMServer) -> None:
    """A 429 with retry-after is retried after exactly that wait and the answer streams."""
    policy, sleep = no_sleep_policy()
    server.enqueue(ErrorReply(429, "Rate limit reached", headers={"retry-after": "1"}), reply("ok"))
    events = await collect(provider_for(server, retry=policy), ask())
    assert sleep.delays == [1.0]
    assert TextDelta("ok") in events
    assert len(server.requests) == 2


async def test_retry_after_as_an_http_date_is_honoured(server: FakeLLMServer) -> None:
    """A retry-after HTTP date is turned into the wait until then, by the policy's clock."""
    policy, sleep = no_sleep_policy(now=lambda: 1_700_000_000.0)  # 2023-11-14T22:13:20Z
    date = "Tue, 14 Nov 2023 22:13:30 GMT"
    server.enqueue(ErrorReply(503, "busy", headers={"retry-after": date}), reply("ok"))
    await collect(provider_for(server, retry=policy), ask())
    assert sleep.delays == [10.0]


async def test_rate_limit_exhausted_raises_rate_limited(server: FakeLLMServer) -> None:
    """After the bounded retries a persistent 429 becomes RateLimited naming the provider."""
    policy, sleep = no_sleep_policy(retries=2)
    server.enqueue(*[ErrorReply(429, "Rate limit reached", headers={"retry-after-ms": "200"})] * 3)
    with pytest.raises(RateLimited) as caught:
        await collect(provider_for(server, retry=policy), ask())
    assert sleep.delays == [0.2, 0.2]
    assert len(server.requests) == 3
    assert "fake is rate limiting requests" in caught.value.message
    assert "gave up after 3 attempts" in caught.value.message


async def test_insufficient_quota_is_not_retried(server: FakeLLMServer) -> None:
    """A 429 saying the quota is exhausted fails at once: waiting cannot help."""
    server.enqueue(ErrorReply(429, "You exceeded your current quota", code="insufficient_quota"))
    with pytest.raises(ProviderFailed, match="quota exhausted") as caught:
        await collect(provider_for(server), ask())
    assert not isinstance(caught.value, RateLimited)
    assert len(server.requests) == 1


async def test_rejected_key_fails_clearly_without_retry(server: FakeLLMServer) -> None:
    """A 401 becomes a ProviderFailed naming the provider and the command that sets a key."""
    server.enqueue(ErrorReply(401, "Incorrect API key provided"))
    with pytest.raises(ProviderFailed) as caught:
        await collect(provider_for(server), ask())
    assert caught.value.message.startswith("fake rejected the API key (HTTP 401: Incorrect API key")
    assert "gsv config set apiKeys.fake" in caught.value.message
    assert not caught.value.retryable
    assert len(server.requests) == 1


async def test_server_error_is_retried_then_succeeds(server: FakeLLMServer) -> None:
    """A 500 is retried with backoff and the second attempt's answer streams."""
    policy, sleep = no_sleep_policy()
    server.enqueue(ErrorReply(500, "The server had an error"), reply("recovered"))
    events = await collect(provider_for(server, retry=policy), ask())
    assert TextDelta("recovered") in events
    assert sleep.delays == [policy.base_delay]


async def test_context_length_error_is_context_overflow(server: FakeLLMServer) -> None:
    """context_length_exceeded becomes ContextOverflow at once, with no retry."""
    message = "This model's maximum context length is 128000 tokens."
    server.enqueue(ErrorReply(400, message, code="context_length_exceeded"))
    with pytest.raises(ContextOverflow, match="maximum context length"):
        await collect(provider_for(server), ask())
    assert len(server.requests) == 1


async def test_other_bad_request_is_not_retried(server: FakeLLMServer) -> None:
    """A plain 400 says the provider refused the request and is not retried."""
    server.enqueue(ErrorReply(400, "Invalid value for 'tools'"))
    with pytest.raises(ProviderFailed, match=r"fake refused the request \(HTTP 400: Invalid value"):
        await collect(provider_for(server), ask())
    assert len(server.requests) == 1


async def test_truncated_stream_fails_after_the_streamed_text(server: FakeLLMServer) -> None:
    """A stream that ends without a finish reason fails; what streamed is not replayed."""
    server.enqueue(reply("Half an ans", end="truncated"))
    seen = []
    with pytest.raises(ProviderFailed, match="stream ended before the response was complete"):
        async for event in provider_for(server).stream(ask()):
            seen.append(event)
    assert seen == [TextDelta("Half an ans")]
    assert len(server.requests) == 1


async def test_dropped_connection_mid_stream_fails_clearly(server: FakeLLMServer) -> None:
    """A connection that drops mid-body is a ProviderFailed, not an SDK exception."""
    server.enqueue(reply("Half", end="aborted"))
    with pytest.raises(ProviderFailed, match="stream ended before the response was complete"):
        await collect(provider_for(server), ask())


async def test_malformed_chunk_fails_clearly(server: FakeLLMServer) -> None:
    """A chunk that is not JSON becomes a ProviderFailed saying the stream was malformed."""
    server.enqueue(reply("text", end="malformed"))
    with pytest.raises(
        ProviderFailed, match="malformed stream from fake: an event is not valid JSON"
    ):
        await collect(provider_for(server), ask())


async def test_a_stream_of_one_endless_line_fails_clearly(server: FakeLLMServer) -> None:
    """A server that sends one line longer than the limit: a malformed stream, not a
    gateway holding the whole line in memory until the model call's timeout."""
    server.enqueue(RawBody("data: " + "x" * (MAX_BYTES + 1024)))
    with pytest.raises(
        ProviderFailed, match="malformed stream from fake: a line passed 16 MiB without ending"
    ):
        await collect(provider_for(server), ask())


async def test_error_inside_stream_is_retried_only_before_any_event(server: FakeLLMServer) -> None:
    """An error chunk before any content is retried; after content it fails without replay."""
    server.enqueue(reply(StreamError("upstream overloaded")), reply("second try"))
    events = await collect(provider_for(server), ask())
    assert TextDelta("second try") in events

    server.enqueue(reply("Hel", StreamError("upstream overloaded")), reply("never sent"))
    with pytest.raises(ProviderFailed, match="fake failed mid-stream: upstream overloaded"):
        await collect(provider_for(server), ask())
    assert server.pending == 1


async def test_connection_refused_names_the_base_url() -> None:
    """Nothing listening at the base URL is a ProviderFailed naming that URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    provider = OpenAICompatProvider("ollama", base_url=url, api_key="x", llm_timeout=5)
    with pytest.raises(ProviderFailed, match=re.escape(f"cannot reach ollama at {url}")):
        await collect(provider, ask())


async def test_no_answer_within_the_llm_timeout_is_timed_out(server: FakeLLMServer) -> None:
    """A provider that never answers ends with TimedOut naming the timeout setting."""
    server.enqueue(Hang())
    with pytest.raises(TimedOut, match=r"fake did not answer within 0.2 s \(timeouts.llmMs\)"):
        await collect(provider_for(server, llm_timeout=0.2), ask())


async def test_loopback_ignores_proxy_variables(
    server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A proxy set in the environment is not used for a 127.0.0.1 base URL."""
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.setenv(var, "http://127.0.0.1:9")  # nothing listens there
    for var in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(var, raising=False)
    events = await collect(provider_for(server), ask())
    assert isinstance(events[-1], Stop)


async def test_empty_queue_answers_the_default_reply(server: FakeLLMServer) -> None:
    """With nothing scripted the fake server still answers, so no test hangs."""
    provider = provider_for(server)
    events = await collect(provider, ask())
    assert assemble(provider, ask(), events)["content"] == [
        {"type": "text", "text": "This is the fake model's default reply."}
    ]


async def test_quirky_server_tool_calls_without_index_or_delta(server: FakeLLMServer) -> None:
    """Whole tool calls without `index`, a null delta and finish "stop" (as some local
    servers send) still become two tool calls and a toolUse stop."""

    def chunk(delta: object, finish: str | None = None) -> dict[str, object]:
        return {
            "id": "x",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "llama",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    def whole_call(call_id: str, path: str) -> dict[str, object]:
        arguments = f'{{"path": "{path}"}}'
        return {"id": call_id, "function": {"name": "n1__Read", "arguments": arguments}}

    server.enqueue(
        RawStream(
            (
                chunk({"role": "assistant", "tool_calls": [whole_call("call_x", "a")]}),
                chunk({"tool_calls": [whole_call("call_y", "b")]}),
                chunk(None, "stop"),
                "[DONE]",
            )
        )
    )
    provider = provider_for(server)
    message = assemble(provider, ask(), await collect(provider, ask()))
    assert message["stopReason"] == "toolUse"
    assert [(b["id"], b["arguments"]) for b in message["content"] if b["type"] == "toolCall"] == [
        ("call_x", {"path": "a"}),
        ("call_y", {"path": "b"}),
    ]


async def test_cancelling_a_stream_propagates_cancellation(server: FakeLLMServer) -> None:
    """Cancelling the consumer mid-stream (what /stop does) raises CancelledError, not a
    provider error, and the provider serves the next request normally."""
    server.enqueue(reply(*["word "] * 50, delay=0.05))
    provider = provider_for(server)
    first = asyncio.Event()

    async def consume() -> None:
        async for _ in provider.stream(ask()):
            first.set()

    task = asyncio.create_task(consume())
    await first.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    events = await collect(provider, ask())
    assert isinstance(events[-1], Stop)


async def test_closing_a_stream_early_releases_it(server: FakeLLMServer) -> None:
    """A consumer that stops after the first event can close the stream cleanly."""
    server.enqueue(reply("one", "two", "three"))
    stream = provider_for(server).stream(ask())
    assert await anext(stream) == TextDelta("one")
    await stream.aclose()  # type: ignore[attr-defined]


def _chunk(delta: dict[str, object], finish: str | None = None) -> str:
    return json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


async def test_comments_unspaced_fields_and_a_missing_last_blank_line_are_read(
    server: FakeLLMServer,
) -> None:
    """The stream is read as server-sent events, not line by line: keep-alive comments
    (OpenRouter's `: OPENROUTER PROCESSING`), `data:` without a space, an event split over
    two `data` lines and a body that ends without its last blank line."""
    body = (
        ": OPENROUTER PROCESSING\n\n"
        f"data:{_chunk({'content': 'Hel'})}\n\n"
        ": ping\n"
        f'data: {{"choices": [{{"index": 0,\ndata: "delta": {{"content": "lo"}}}}]}}\n\n'
        f"data: {_chunk({}, 'stop')}\n\n"
        "data: [DONE]"
    )
    server.enqueue(RawBody(body))
    events = await collect(provider_for(server), ask())
    assert [e for e in events if isinstance(e, TextDelta)] == [TextDelta("Hel"), TextDelta("lo")]
    assert events[-1] == Stop(STOP_END)


async def test_an_error_chunk_of_any_shape_fails_the_stream(server: FakeLLMServer) -> None:
    """`{"error": "text"}` (not an object) still fails mid-stream with its words."""
    server.enqueue(RawBody(f'data: {_chunk({"content": "a"})}\n\ndata: {{"error": "boom"}}\n\n'))
    with pytest.raises(ProviderFailed, match="fake failed mid-stream: boom"):
        await collect(provider_for(server), ask())


@pytest.mark.parametrize(
    "chunk",
    [
        '["not", "an", "object"]',
        '{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"name": 5}}]}}]}',
        '{"choices": "many"}',
    ],
)
async def test_a_chunk_of_the_wrong_shape_is_a_malformed_stream(
    server: FakeLLMServer, chunk: str
) -> None:
    server.enqueue(RawBody(f"data: {chunk}\n\ndata: [DONE]\n\n"))
    with pytest.raises(ProviderFailed, match="malformed stream from fake"):
        await collect(provider_for(server), ask())
