"""The chat completions body (providers/chat_request.py): what a conversation's memo keeps
changes nothing in the bytes sent, and only new messages are encoded."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from collections.abc import Hashable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from gsv_core.agent.per_message import PerMessage
from gsv_core.providers.base import ModelRequest
from gsv_core.providers.base import ToolSpec
from gsv_core.providers.chat_request import ToolsJson
from gsv_core.providers.chat_request import chat_body

EXAMPLES = int(os.environ.get("GSV_FUZZ_EXAMPLES", "60"))
IMAGE = {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo" * 50}


class CountingMemo(PerMessage[Any]):
    """The agent's memo, counting the messages it had to compute."""

    def __init__(self) -> None:
        super().__init__()
        self.computed = 0

    def each(self, messages: Any, compute: Callable[[Any], Any], inputs: Hashable = None) -> Any:
        def counted(message: Any) -> Any:
            self.computed += 1
            return compute(message)

        return super().each(messages, counted, inputs)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def reply(text: str, calls: list[tuple[str, dict[str, Any]]] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    content: list[dict[str, Any]] = [{"type": "thinking", "thinking": "hmm"}]
    if text:
        content.append({"type": "text", "text": text})
    content += [{"type": "toolCall", "id": f"c{n}", "name": name, "arguments": args}
                for n, (name, args) in enumerate(calls)]  # fmt: skip
    return {"role": "assistant", "content": content, "provider": "p", "model": "m",
            "usage": {}, "stopReason": "stop", "timestamp": 2}  # fmt: skip


def result(call_id: str, text: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    content = [{"type": "text", "text": text}] if text else []
    return {"role": "toolResult", "toolCallId": call_id, "toolName": "n1__Bash",
            "content": [*content, *blocks], "isError": False, "timestamp": 3}  # fmt: skip


TOOLS = [ToolSpec("n1__Bash", "Run a command", {"type": "object", "properties": {}})]


def request(messages: list[dict[str, Any]], memo: Any = None, **fields: Any) -> ModelRequest:
    return ModelRequest("m", "You are gsv.", messages, list(TOOLS), memo=memo, **fields)  # type: ignore[arg-type]


def test_the_body_holds_every_field_a_chat_completion_takes() -> None:
    history = [user("hi"), reply("", [("n1__Bash", {"command": "ls"})]), result("c0", "a b")]
    body = json.loads(chat_body(request(history, thinking="xhigh", max_tokens=50), None, "k1"))
    assert body == {
        "model": "m",
        "stream": True,
        "stream_options": {"include_usage": True},
        "reasoning_effort": "high",
        "max_completion_tokens": 50,
        "prompt_cache_key": "k1",
        "messages": [
            {"role": "system", "content": "You are gsv."},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c0", "type": "function",
             "function": {"name": "n1__Bash", "arguments": '{"command": "ls"}'}}]},
            {"role": "tool", "tool_call_id": "c0", "content": "a b"},
        ],
        "tools": [{"type": "function", "function": {"name": "n1__Bash",
                   "description": "Run a command", "parameters": TOOLS[0].parameters}}],
    }  # fmt: skip


def test_a_growing_history_encodes_only_its_new_messages() -> None:
    memo = CountingMemo()
    history = [user("one"), reply("two")]
    first = chat_body(request(history, memo))
    assert memo.computed == 2
    history = [*history, user("three"), reply("four")]
    second = chat_body(request(history, memo))
    assert memo.computed == 4  # the first two were kept
    assert second == chat_body(request(history))  # the same bytes as without a memo
    assert second != first


def test_a_history_with_images_is_encoded_whole_and_its_images_are_not_kept() -> None:
    memo = CountingMemo()
    history = [
        user("look"),
        reply("", [("n1__Bash", {}), ("n1__Bash", {})]),
        result("c0", "", IMAGE),
        result("c1", "plain"),  # the images follow both tool messages, not between them
        reply("seen"),
    ]
    body = chat_body(request(history, memo))
    assert body == chat_body(request(history))
    sent = json.loads(body)["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool", "user",
                                         "assistant"]  # fmt: skip
    assert sent[5]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    kept = memo.each(history, lambda m: pytest.fail("all kept"), "openai-chat")
    assert not any(IMAGE["data"].encode() in value for value in kept if isinstance(value, bytes))


def test_an_empty_assistant_turn_is_left_out_from_the_kept_form_too() -> None:
    history = [user("hi"), reply(""), user("again")]
    sent = json.loads(chat_body(request(history, CountingMemo())))["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "user"]


def test_the_tools_json_is_kept_while_the_tool_list_is_the_same() -> None:
    tools = ToolsJson()
    first = tools.of(TOOLS)
    assert tools.of([ToolSpec(t.name, t.description, t.parameters) for t in TOOLS]) is first
    changed = [ToolSpec("n1__Bash", "Run a command", {"type": "object"})]
    assert json.loads(tools.of(changed))[0]["function"]["parameters"] == {"type": "object"}
    renamed = [ToolSpec("n2__Bash", "Run a command", changed[0].parameters)]
    assert json.loads(tools.of(renamed))[0]["function"]["name"] == "n2__Bash"


def test_a_value_json_cannot_carry_is_refused_before_anything_is_sent() -> None:
    bad = [ToolSpec("n1__Bash", "Run", {"type": "object", "default": math.nan})]
    with pytest.raises(ValueError, match="JSON"):
        chat_body(ModelRequest("m", "", [user("hi")], bad))  # type: ignore[list-item]


# -- any history, any sequence of calls --------------------------------------------------

texts = st.text(max_size=12)
blocks = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, texts),
    st.just(IMAGE),
)
messages = st.one_of(
    st.builds(user, texts),
    st.builds(lambda c: {"role": "user", "content": c, "timestamp": 1}, st.lists(blocks, max_size=3)),
    st.builds(reply, texts, st.lists(st.tuples(st.just("n1__Bash"),
              st.dictionaries(texts, st.integers() | texts, max_size=2)), max_size=2)),
    st.builds(lambda i, t, b: result(f"c{i}", t, *b), st.integers(0, 3), texts,
              st.lists(st.just(IMAGE), max_size=2)),
)  # fmt: skip


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(st.lists(messages, max_size=4), min_size=1, max_size=5), st.data())
def test_with_or_without_the_memo_the_bytes_are_the_same(
    steps: list[list[dict[str, Any]]], data: st.DataObject
) -> None:
    """A conversation's calls: mostly the history grows; now and then part of it is
    replaced (a compaction, a retry without the failed reply)."""
    memo = PerMessage[Any]()
    history: list[dict[str, Any]] = []
    for added in steps:
        if history and data.draw(st.booleans()):
            keep = data.draw(st.integers(0, len(history)))
            history = history[:keep]
        history = [*history, *added]
        kept = chat_body(request(history, memo))
        assert kept == chat_body(request(history))
        assert json.loads(kept)["messages"][0] == {"role": "system", "content": "You are gsv."}
