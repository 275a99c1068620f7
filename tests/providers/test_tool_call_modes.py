"""`providers.<name>.toolCalls` through the real SDKs against the fake LLM server: `off`
sends no tools at all, `text` describes them in the system prompt and turns a reply that
is one call written as JSON into a tool call; earlier calls and results go back as text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from gsv_core.protocol.messages import Message
from gsv_core.providers.base import ModelRequest
from gsv_core.providers.base import Provider
from gsv_core.providers.base import Stop
from gsv_core.providers.base import TextDelta
from gsv_core.providers.base import TextRetracted
from gsv_core.providers.base import ToolCallStart
from gsv_core.providers.registry import resolve_provider
from gsv_core.providers.tool_call_modes import OFF_NOTE
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import ToolCall
from tests.fakes.llm_server import fake_llm_server
from tests.fakes.llm_server import reply
from tests.providers import READ_TOOL
from tests.providers import ask
from tests.providers import assemble
from tests.providers import collect
from tests.providers import no_sleep_policy

APIS = ["openai", "anthropic"]
CALL = '{"name": "n1__Read", "arguments": {"path": "notes.txt"}}'


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with fake_llm_server() as running:
        yield running


def provider(server: FakeLLMServer, api: str, mode: str | None) -> Provider:
    base = server.openai_base_url if api == "openai" else server.anthropic_base_url
    entry: dict[str, Any] = {"api": api, "baseUrl": base}
    if mode is not None:
        entry["toolCalls"] = mode
    config = {"providers": {"fake": entry}}
    return resolve_provider(config, "fake", llm_timeout=10, retry=no_sleep_policy()[0])


def with_history() -> ModelRequest:
    """A request whose history holds a native call and its result."""
    messages: list[Message] = [
        {"role": "user", "content": "read it", "timestamp": 1},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Looking."},
            {"type": "toolCall", "id": "c1", "name": "n1__Read", "arguments": {"path": "a"}}],
         "provider": "fake", "model": "m", "usage": {"input": 1, "output": 1, "total": 2},
         "stopReason": "toolUse", "timestamp": 2},
        {"role": "toolResult", "toolCallId": "c1", "toolName": "n1__Read",
         "content": [{"type": "text", "text": "the code is 0000"}], "isError": False,
         "timestamp": 3},
        {"role": "user", "content": "and now?", "timestamp": 4},
    ]  # fmt: skip
    return ModelRequest("fake-model", "You are a test.", messages, tools=[READ_TOOL])


def offered_tools(body: dict[str, Any]) -> list[str]:
    return [t.get("name") or t["function"]["name"] for t in body.get("tools") or []]


def system_of(body: dict[str, Any]) -> str:
    """The system prompt as sent: Anthropic's `system` field or OpenAI's system message."""
    if "system" in body:
        system = body["system"]
        return system if isinstance(system, str) else "".join(b["text"] for b in system)
    return str(body["messages"][0]["content"])


def tool_shapes(body: dict[str, Any]) -> list[str]:
    """The API's tool-call and tool-result parts anywhere in the sent messages."""
    found = []
    for message in body["messages"]:
        if message.get("role") == "tool" or message.get("tool_calls"):
            found.append(message["role"])
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") in ("tool_use", "tool_result"):
                found.append(block["type"])
    return found


@pytest.mark.parametrize("api", APIS)
async def test_the_default_sends_tools_natively(server: FakeLLMServer, api: str) -> None:
    """Unset, toolCalls is native: the API's tools field carries the tools."""
    server.enqueue(reply(ToolCall("n1__Read", {"path": "a"})))
    events = await collect(provider(server, api, None), ask(tools=[READ_TOOL]))
    assert offered_tools(server.last_body) == ["n1__Read"]
    assert [e.name for e in events if isinstance(e, ToolCallStart)] == ["n1__Read"]


@pytest.mark.parametrize("api", APIS)
async def test_off_sends_no_tools_and_the_model_answers_in_words(
    server: FakeLLMServer, api: str
) -> None:
    """off: no tools field, no tool parts in the history (written as text), a note in
    the system prompt; the answer is the model's text."""
    server.enqueue(reply("The code ", "is 0000."))
    chosen = provider(server, api, "off")
    events = await collect(chosen, with_history())
    body = server.last_body
    assert "tools" not in body and "tool_choice" not in body
    assert tool_shapes(body) == []
    assert system_of(body).endswith(OFF_NOTE)
    sent = json.dumps(body["messages"])
    assert "the code is 0000" in sent and "n1__Read" in sent  # what happened, as words
    assert assemble(chosen, with_history(), events)["content"] == [
        {"type": "text", "text": "The code is 0000."}
    ]


@pytest.mark.parametrize("api", APIS)
async def test_text_mode_describes_the_tools_and_turns_a_json_reply_into_a_call(
    server: FakeLLMServer, api: str
) -> None:
    """text: the tools are in the system prompt, not the API field; a reply that is one
    call streams as text, is retracted, and becomes the call, stopping for the tool."""
    server.enqueue(reply(CALL[:20], CALL[20:]))
    chosen = provider(server, api, "text")
    request = ask(tools=[READ_TOOL])
    events = await collect(chosen, request)
    body = server.last_body
    assert "tools" not in body
    system = system_of(body)
    assert system.startswith("You are a test.") and "- n1__Read: Read a file" in system
    assert '"required":["path"]' in system and '{"name": "<tool name>"' in system
    streamed = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert streamed == CALL
    kinds = [type(e).__name__ for e in events]
    assert kinds.index("TextRetracted") < kinds.index("ToolCallStart") < kinds.index("Stop")
    assert [e.reason for e in events if isinstance(e, Stop)] == ["toolUse"]
    message = assemble(chosen, request, events)
    assert [(b["type"], b.get("name"), b.get("arguments")) for b in message["content"]] == [
        ("toolCall", "n1__Read", {"path": "notes.txt"})
    ]
    assert message["stopReason"] == "toolUse"


@pytest.mark.parametrize(
    "text",
    [
        f"I would answer {CALL} to read it.",  # a quoted example
        '{"name": "n1__Delete", "arguments": {"path": "notes.txt"}}',  # not offered
        f"[{CALL}, {CALL}]",  # several
        '{"name": "n1__Read", "arguments": {"path": ',  # cut short
    ],
)
async def test_text_mode_leaves_anything_but_one_offered_call_as_text(
    server: FakeLLMServer, text: str
) -> None:
    """Prose, unknown tools, several calls and broken JSON stay the answer's text."""
    server.enqueue(reply(text))
    chosen = provider(server, "openai", "text")
    events = await collect(chosen, ask(tools=[READ_TOOL]))
    assert not any(isinstance(e, TextRetracted | ToolCallStart) for e in events)
    assert [e.reason for e in events if isinstance(e, Stop)] == ["stop"]
    assert assemble(chosen, ask(), events)["content"] == [{"type": "text", "text": text}]


@pytest.mark.parametrize("api", APIS)
async def test_text_mode_writes_earlier_calls_and_results_as_text(
    server: FakeLLMServer, api: str
) -> None:
    """The history's call reads as the JSON the model would write; its result comes back
    as a user message naming the tool."""
    server.enqueue(reply("ok"))
    await collect(provider(server, api, "text"), with_history())
    body = server.last_body
    assert tool_shapes(body) == []
    turns = [m for m in body["messages"] if m["role"] != "system"]
    assert [m["role"] for m in turns] == ["user", "assistant", "user", "user"]
    said = json.dumps(turns[1]["content"])
    assert json.dumps('{"name": "n1__Read", "arguments": {"path": "a"}}')[1:-1] in said
    assert "[tool result] n1__Read returned:\\nthe code is 0000" in json.dumps(turns[2])
