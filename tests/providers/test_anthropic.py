"""The Anthropic adapter, driven through the real `anthropic` SDK against the fake LLM
server: streaming (text, tools, thinking), request mapping, retries and errors."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator

import pytest

from gsv_core.errors import ContextOverflow
from gsv_core.errors import ProviderFailed
from gsv_core.errors import RateLimited
from gsv_core.protocol.messages import Message
from gsv_core.providers.anthropic import DEFAULT_MAX_TOKENS
from gsv_core.providers.anthropic import THINKING_BUDGETS
from gsv_core.providers.anthropic import AnthropicProvider
from gsv_core.providers.base import ModelRequest
from gsv_core.providers.base import Stop
from gsv_core.providers.base import TextDelta
from gsv_core.providers.base import ThinkingDelta
from gsv_core.providers.base import ToolCallDelta
from gsv_core.providers.base import ToolCallEnd
from gsv_core.providers.base import ToolCallStart
from gsv_core.providers.base import UsageReport
from tests.fakes.llm_server import ErrorReply
from tests.fakes.llm_server import FakeLLMServer
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


def provider_for(server: FakeLLMServer, **options: object) -> AnthropicProvider:
    policy = options.pop("retry", None) or no_sleep_policy()[0]
    return AnthropicProvider(
        "anthropic",
        base_url=server.anthropic_base_url,
        api_key="sk-ant-test",
        llm_timeout=10.0,
        retry=policy,  # type: ignore[arg-type]
    )


async def test_text_streams_as_several_deltas_in_order(server: FakeLLMServer) -> None:
    """Each text_delta arrives as its own TextDelta, in order, then usage and stop."""
    server.enqueue(reply("Hel", "lo, ", "world", usage=(25, 15)))
    provider = provider_for(server)
    events = await collect(provider, ask())
    assert events == [
        TextDelta("Hel"),
        TextDelta("lo, "),
        TextDelta("world"),
        UsageReport({"input": 25, "output": 15, "total": 40}),
        Stop("stop"),
    ]
    assert assemble(provider, ask(), events)["content"] == [
        {"type": "text", "text": "Hello, world"}
    ]


async def test_tool_use_fragments_assemble_into_arguments(server: FakeLLMServer) -> None:
    """input_json_delta fragments stream as ToolCallDeltas and fold into the arguments."""
    fragments = ['{"pa', 'th": "no', 'tes.txt"}']
    server.enqueue(reply("Reading.", ToolCall("n1__Read", fragments, id="toolu_01")))
    provider = provider_for(server)
    events = await collect(provider, ask(tools=[READ_TOOL]))
    assert events[1:6] == [
        ToolCallStart(1, "toolu_01", "n1__Read"),
        *(ToolCallDelta(1, f) for f in fragments),
        ToolCallEnd(1),
    ]
    message = assemble(provider, ask(), events)
    assert message["stopReason"] == "toolUse"
    assert message["content"][1] == {
        "type": "toolCall",
        "id": "toolu_01",
        "name": "n1__Read",
        "arguments": {"path": "notes.txt"},
    }


async def test_parallel_tool_uses_keep_their_ids_and_order(server: FakeLLMServer) -> None:
    """Two tool_use blocks become two tool-call blocks with their own ids and arguments."""
    server.enqueue(
        reply(
            ToolCall("n1__Read", {"path": "a.txt"}, id="toolu_a"),
            ToolCall("n2__Bash", {"command": "ls -la"}, id="toolu_b"),
        )
    )
    provider = provider_for(server)
    events = await collect(provider, ask())
    calls = [b for b in assemble(provider, ask(), events)["content"] if b["type"] == "toolCall"]
    assert [(c["id"], c["name"], c["arguments"]) for c in calls] == [
        ("toolu_a", "n1__Read", {"path": "a.txt"}),
        ("toolu_b", "n2__Bash", {"command": "ls -la"}),
    ]


async def test_thinking_streams_with_its_signature(server: FakeLLMServer) -> None:
    """thinking_delta and signature_delta become one signed thinking block before the text."""
    server.enqueue(reply(Thinking("Let me "), Thinking("think.", signature="EqQBCgIYAhIM"), "42"))
    provider = provider_for(server)
    events = await collect(provider, ask(thinking="low"))
    assert events[:3] == [
        ThinkingDelta("Let me "),
        ThinkingDelta("think."),
        ThinkingDelta("", signature="EqQBCgIYAhIM"),
    ]
    assert assemble(provider, ask(), events)["content"] == [
        {"type": "thinking", "thinking": "Let me think.", "signature": "EqQBCgIYAhIM"},
        {"type": "text", "text": "42"},
    ]


async def test_usage_counts_cache_reads_and_writes_as_input(server: FakeLLMServer) -> None:
    """Input is input_tokens plus cache reads and writes; both cache counts are reported."""
    server.enqueue(reply("ok", usage=(50, 20), cache_read=1000, cache_write=200))
    events = await collect(provider_for(server), ask())
    usage = [e.usage for e in events if isinstance(e, UsageReport)]
    assert usage == [
        {"input": 1250, "output": 20, "total": 1270, "cacheRead": 1000, "cacheWrite": 200}
    ]


async def test_max_tokens_stop_is_length(server: FakeLLMServer) -> None:
    """stop_reason max_tokens becomes the canonical "length"."""
    server.enqueue(reply("cut o", stop="length"))
    events = await collect(provider_for(server), ask())
    assert events[-1] == Stop("length")


def conversation() -> list[Message]:
    """A history with an image, signed and unsigned thinking, two tool calls and their
    results (one an error, one an image)."""
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
                {"type": "thinking", "thinking": "I should read them.", "signature": "sig-1"},
                {"type": "thinking", "thinking": "from another provider"},
                {"type": "text", "text": "Reading both."},
                {
                    "type": "toolCall",
                    "id": "toolu_a",
                    "name": "n1__Read",
                    "arguments": {"path": "a.txt"},
                },
                {
                    "type": "toolCall",
                    "id": "toolu_b",
                    "name": "n1__Read",
                    "arguments": {"path": "b.png"},
                },
            ],
            "provider": "anthropic",
            "model": "claude-test",
            "usage": {"input": 1, "output": 1, "total": 2},
            "stopReason": "toolUse",
            "timestamp": 2,
        },
        {
            "role": "toolResult",
            "toolCallId": "toolu_a",
            "toolName": "n1__Read",
            "content": [{"type": "text", "text": "ENOENT: no such file"}],
            "isError": True,
            "timestamp": 3,
        },
        {
            "role": "toolResult",
            "toolCallId": "toolu_b",
            "toolName": "n1__Read",
            "content": [{"type": "image", "mimeType": "image/png", "data": PIXEL}],
            "isError": False,
            "timestamp": 4,
        },
        {"role": "user", "content": "Thanks", "timestamp": 5},
    ]


async def test_request_maps_system_history_images_and_tools(server: FakeLLMServer) -> None:
    """The SDK sends `system` apart, images as base64 sources, signed thinking and tool_use
    back, and consecutive tool results merged into one user message."""
    request = ModelRequest(
        model="claude-test", system="You are a test.", messages=conversation(), tools=[READ_TOOL]
    )
    await collect(provider_for(server), request)
    body = server.last_body
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PIXEL},
    }
    assert body["model"] == "claude-test"
    cached = {"type": "ephemeral"}  # breakpoints: tools, system, the last two user turns
    assert body["system"] == [{"type": "text", "text": "You are a test.", "cache_control": cached}]
    assert body["max_tokens"] == DEFAULT_MAX_TOKENS
    assert body["stream"] is True
    assert "thinking" not in body
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "What is in these files?"}, image]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "I should read them.", "signature": "sig-1"},
                {"type": "text", "text": "Reading both."},
                {
                    "type": "tool_use",
                    "id": "toolu_a",
                    "name": "n1__Read",
                    "input": {"path": "a.txt"},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_b",
                    "name": "n1__Read",
                    "input": {"path": "b.png"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_a",
                    "content": [{"type": "text", "text": "ENOENT: no such file"}],
                    "is_error": True,
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_b",
                    "content": [image],
                    "cache_control": cached,
                },
            ],
        },
        {"role": "user", "content": [{"type": "text", "text": "Thanks", "cache_control": cached}]},
    ]
    assert body["tools"] == [
        {
            "name": "n1__Read",
            "description": "Read a file",
            "input_schema": READ_TOOL.parameters,
            "cache_control": cached,
        }
    ]


@pytest.mark.parametrize("level", ["minimal", "medium", "xhigh"])
async def test_thinking_level_sets_a_budget_below_max_tokens(
    server: FakeLLMServer, level: str
) -> None:
    """A thinking level enables thinking with its budget; max_tokens leaves the answer its room."""
    await collect(provider_for(server), ask(thinking=level, max_tokens=1000))
    body = server.last_body
    budget = THINKING_BUDGETS[level]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert body["max_tokens"] == budget + 1000


async def test_rate_limit_waits_retry_after_then_succeeds(server: FakeLLMServer) -> None:
    """A 429 with retry-after is retried after exactly that wait and the answer streams."""
    policy, sleep = no_sleep_policy()
    server.enqueue(ErrorReply(429, "Number of requests exceeded", headers={"retry-after": "1"}))
    server.enqueue(reply("ok"))
    events = await collect(provider_for(server, retry=policy), ask())
    assert sleep.delays == [1.0]
    assert TextDelta("ok") in events


async def test_rate_limit_exhausted_raises_rate_limited(server: FakeLLMServer) -> None:
    """After the bounded retries a persistent 429 becomes RateLimited with the wait asked for."""
    policy, sleep = no_sleep_policy(retries=1)
    server.enqueue(
        *[ErrorReply(429, "Number of requests exceeded", headers={"retry-after": "2"})] * 2
    )
    with pytest.raises(RateLimited) as caught:
        await collect(provider_for(server, retry=policy), ask())
    assert sleep.delays == [2.0]
    assert caught.value.message.startswith("anthropic is rate limiting requests (HTTP 429")
    assert caught.value.details == {"retryAfterMs": 2000}


async def test_retry_after_longer_than_the_cap_fails_at_once(server: FakeLLMServer) -> None:
    """A provider asking for a wait beyond the policy's bound is not waited for."""
    policy, sleep = no_sleep_policy(max_delay=30.0)
    server.enqueue(ErrorReply(429, "slow down", headers={"retry-after": "600"}), reply("unused"))
    with pytest.raises(RateLimited, match="retry after 600 s"):
        await collect(provider_for(server, retry=policy), ask())
    assert sleep.delays == []


async def test_overloaded_is_retried_then_succeeds(server: FakeLLMServer) -> None:
    """A 529 overloaded answer is retried and the next attempt's answer streams."""
    policy, sleep = no_sleep_policy()
    server.enqueue(ErrorReply(529, "Overloaded"), ErrorReply(500, "Internal error"), reply("fine"))
    events = await collect(provider_for(server, retry=policy), ask())
    assert TextDelta("fine") in events
    assert sleep.delays == [policy.base_delay, policy.base_delay * 2]


async def test_server_errors_exhausted_raise_provider_failed(server: FakeLLMServer) -> None:
    """Persistent 5xx answers end in a ProviderFailed naming the status and the message."""
    policy, _ = no_sleep_policy(retries=1)
    server.enqueue(ErrorReply(500, "Internal server error"), ErrorReply(529, "Overloaded"))
    with pytest.raises(ProviderFailed, match=r"anthropic is overloaded \(HTTP 529: Overloaded\)"):
        await collect(provider_for(server, retry=policy), ask())


async def test_rejected_key_fails_clearly_without_retry(server: FakeLLMServer) -> None:
    """A 401 becomes a ProviderFailed saying anthropic rejected the key and how to set one."""
    server.enqueue(ErrorReply(401, "invalid x-api-key"))
    with pytest.raises(ProviderFailed) as caught:
        await collect(provider_for(server), ask())
    assert caught.value.message == (
        "anthropic rejected the API key (HTTP 401: invalid x-api-key); set a valid one with "
        "gsv config set apiKeys.anthropic NEW_KEY"
    )
    assert len(server.requests) == 1


async def test_prompt_too_long_is_context_overflow(server: FakeLLMServer) -> None:
    """ "prompt is too long" becomes ContextOverflow, with no retry."""
    server.enqueue(ErrorReply(400, "prompt is too long: 208310 tokens > 200000 maximum"))
    with pytest.raises(ContextOverflow, match="prompt is too long"):
        await collect(provider_for(server), ask())
    assert len(server.requests) == 1


async def test_stream_without_message_stop_fails(server: FakeLLMServer) -> None:
    """A stream that ends before message_stop fails after what it streamed."""
    server.enqueue(reply("Half an ans", end="truncated"))
    seen = []
    with pytest.raises(
        ProviderFailed, match="anthropic stream ended before the response was complete"
    ):
        async for event in provider_for(server).stream(ask()):
            seen.append(event)
    assert seen == [TextDelta("Half an ans")]


async def test_dropped_connection_mid_stream_fails_clearly(server: FakeLLMServer) -> None:
    """A connection that drops mid-body is a ProviderFailed, not an httpx exception."""
    server.enqueue(reply("Half", end="aborted"))
    with pytest.raises(ProviderFailed, match="stream ended before the response was complete"):
        await collect(provider_for(server), ask())


async def test_malformed_event_fails_clearly(server: FakeLLMServer) -> None:
    """An event that is not JSON becomes a ProviderFailed saying the stream was malformed."""
    server.enqueue(reply("text", end="malformed"))
    with pytest.raises(ProviderFailed, match="malformed stream from anthropic"):
        await collect(provider_for(server), ask())


async def test_error_event_is_retried_only_before_any_content(server: FakeLLMServer) -> None:
    """An overloaded error event right after message_start is retried; after text it fails
    without replaying the half-streamed answer."""
    server.enqueue(reply(StreamError("Overloaded")), reply("second try"))
    events = await collect(provider_for(server), ask())
    assert TextDelta("second try") in events

    server.enqueue(reply("Hel", StreamError("Overloaded")), reply("never sent"))
    seen = []
    with pytest.raises(ProviderFailed, match="anthropic is overloaded"):
        async for event in provider_for(server).stream(ask()):
            seen.append(event)
    assert seen == [TextDelta("Hel")]
    assert server.pending == 1


async def test_connection_refused_names_the_base_url() -> None:
    """Nothing listening at the base URL is a ProviderFailed naming that URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    provider = AnthropicProvider("anthropic", base_url=url, api_key="x", llm_timeout=5)
    with pytest.raises(ProviderFailed, match=re.escape(f"cannot reach anthropic at {url}")):
        await collect(provider, ask())


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
