"""Prompt caching: Anthropic requests carry cache breakpoints on the tools, the system
prompt and the conversation, so the next step of a conversation reads its prefix from
cache (checked against a fake server that caches as the API documents); OpenAI requests
carry a per-conversation `prompt_cache_key` where the endpoint is OpenAI's own; tool
schemas reach the model without the null branches of optional fields."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gsv_core.protocol.messages import Message
from gsv_core.providers.anthropic import AnthropicProvider
from gsv_core.providers.anthropic import mark_conversation_prefix
from gsv_core.providers.base import ModelRequest
from gsv_core.providers.base import ToolSpec
from gsv_core.providers.openai_compat import OpenAICompatProvider
from gsv_core.providers.registry import provider_settings
from gsv_core.providers.tool_schema import for_model
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import fake_llm_server
from tests.fakes.llm_server import reply
from tests.fakes.prompt_cache import PromptCache
from tests.fakes.prompt_cache import TooManyBreakpoints
from tests.providers import collect
from tests.providers import no_sleep_policy

CACHED = {"type": "ephemeral"}
BIG_TOOL = ToolSpec("n1__Read", "Read a file. " + "Long description. " * 400, {"type": "object"})


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with fake_llm_server() as running:
        yield running


def anthropic(server: FakeLLMServer) -> AnthropicProvider:
    return AnthropicProvider("anthropic", base_url=server.anthropic_base_url, api_key="k",
                             llm_timeout=10.0, retry=no_sleep_policy()[0])  # fmt: skip


def user(text: str) -> Message:
    return {"role": "user", "content": text, "timestamp": 0}


def assistant(text: str) -> Message:
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "api": "x",
            "provider": "x", "model": "x", "stopReason": "stop", "timestamp": 0,
            "usage": {"input": 0, "output": 0, "total": 0}}  # type: ignore[typeddict-item]  # fmt: skip


def marked(body: dict[str, Any]) -> list[str]:
    """Where the breakpoints are: 'tools', 'system', or the message index."""
    places = [f"tool:{t['name']}" for t in body.get("tools", []) if "cache_control" in t]
    places += ["system" for block in body.get("system", []) if "cache_control" in block]
    for index, message in enumerate(body["messages"]):
        content = message["content"]
        if isinstance(content, list) and any("cache_control" in b for b in content):
            places.append(f"message:{index}")
    return places


async def test_breakpoints_sit_on_tools_system_and_the_last_two_user_turns(
    server: FakeLLMServer,
) -> None:
    history = [user("one"), assistant("a"), user("two"), assistant("b"), user("three")]
    request = ModelRequest(model="m", system="Be brief.", messages=history, tools=[BIG_TOOL])
    await collect(anthropic(server), request)
    body = server.last_body
    assert marked(body) == ["tool:n1__Read", "system", "message:2", "message:4"]
    assert body["messages"][4]["content"] == [
        {"type": "text", "text": "three", "cache_control": CACHED}
    ]
    assert body["messages"][0]["content"] == "one"  # unmarked turns stay as they were


def test_marking_skips_empty_and_assistant_turns() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "first"},
        {"role": "user", "content": ""},  # the API refuses an empty text block
        {"role": "assistant", "content": [{"type": "text", "text": "prefill"}]},
    ]
    mark_conversation_prefix(messages)
    assert messages[0]["content"] == [{"type": "text", "text": "first", "cache_control": CACHED}]
    assert messages[1]["content"] == ""
    assert "cache_control" not in messages[2]["content"][0]
    mark_conversation_prefix([])  # nothing to mark is fine


async def test_the_next_step_reads_the_conversation_so_far_from_cache(
    server: FakeLLMServer,
) -> None:
    """Turn two of a conversation: everything up to the first turn's end is read."""
    server.prompt_cache = PromptCache()
    provider, history = anthropic(server), [user("What is in the notes?")]
    for _ in range(2):
        server.enqueue(reply("They say hello."))
        await collect(provider, ModelRequest("m", "Be brief.", list(history), [BIG_TOOL]))
        history += [assistant("They say hello."), user("And now?")]
    first, second = (request.cache_usage for request in server.requests)
    assert first is not None and second is not None
    assert first.cache_read == 0 and first.cache_write > 0
    assert second.cache_read >= first.cache_write  # the whole first prompt, from cache
    assert second.input_tokens < second.cache_read / 10


def test_the_fake_refuses_a_fifth_breakpoint_as_the_api_does() -> None:
    """The fake holds the adapter to the API's limit of four breakpoints."""
    blocks = [{"type": "text", "text": str(i), "cache_control": CACHED} for i in range(5)]
    with pytest.raises(TooManyBreakpoints, match="maximum of 4"):
        PromptCache().usage({"messages": [{"role": "user", "content": blocks}]})


def openai(server: FakeLLMServer, cache_key: bool) -> OpenAICompatProvider:
    return OpenAICompatProvider("openai", base_url=server.openai_base_url, api_key="k",
                                llm_timeout=10.0, retry=no_sleep_policy()[0],
                                prompt_cache_key=cache_key)  # fmt: skip


@pytest.mark.parametrize("enabled", [True, False])
async def test_openai_gets_the_conversation_cache_key_when_enabled(
    server: FakeLLMServer, enabled: bool
) -> None:
    request = ModelRequest("gpt", "Be brief.", [user("hi")], cache_key="session-uuid")
    await collect(openai(server, enabled), request)
    assert server.last_body.get("prompt_cache_key") == ("session-uuid" if enabled else None)


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"api": "openai", "baseUrl": "https://api.openai.com/v1"}, True),
        ({"api": "openai", "baseUrl": "http://127.0.0.1:11434/v1"}, False),
        ({"api": "openai", "baseUrl": "http://127.0.0.1:9/v1", "promptCacheKey": True}, True),
        ({"api": "openai", "baseUrl": "https://api.openai.com/v1", "promptCacheKey": False}, False),
    ],
)
def test_the_cache_key_goes_to_openai_itself_unless_configured(
    entry: dict[str, Any], expected: bool
) -> None:
    config = {"providers": {"p": {**entry, "apiKey": "sk-x"}}}
    assert provider_settings(config, "p").prompt_cache_key is expected


def test_schemas_lose_null_branches_and_keep_everything_else() -> None:
    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "path": {
                "anyOf": [{"type": "string"}, {"type": "null"}],
                "default": None,
                "description": "Where.",
            },
            "limit": {
                "anyOf": [{"minimum": 1, "type": "integer"}, {"type": "null"}],
                "default": None,
            },
            "either": {"anyOf": [{"type": "string"}, {"type": "object"}, {"type": "null"}]},
            "mode": {"default": "due", "enum": ["due", "force"], "type": "string"},
        },
    }
    assert for_model(schema) == {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "path": {"type": "string", "description": "Where."},
            "limit": {"minimum": 1, "type": "integer"},
            "either": {"anyOf": [{"type": "string"}, {"type": "object"}]},
            "mode": {"default": "due", "enum": ["due", "force"], "type": "string"},
        },
        "required": [],
    }
    assert schema["properties"]["path"]["default"] is None  # the original is untouched
