"""The body of a chat completions request, as JSON bytes (openai_compat.py posts it).

Canonical messages map to chat messages (the system prompt first; a tool step's images
follow all its tool messages as one user message, since chat messages of the `tool` role
carry text only). The body is encoded here, not by the SDK, as the SDK would encode it
(compact, UTF-8, no NaN), because most of it is the same from one call to the next:

- each history message's JSON is kept in the conversation's memo (`ModelRequest.memo`,
  agent/per_message.py), so a call encodes only the messages new since the last one
  (the whole history, converted and encoded again, was the part of a turn's CPU that
  grew with the session; bench/turn_profile.py);
- the tools' JSON is kept by `ToolsJson` for as long as the tool list is the same.

A history holding images is converted and encoded whole on each call: images are read in
for each request (agent/model_view.py), and their base64 is never kept.
"""

from __future__ import annotations

import json
from typing import Any

from gsv_core.protocol.messages import AssistantMessage
from gsv_core.protocol.messages import ImageBlock
from gsv_core.protocol.messages import Message
from gsv_core.protocol.messages import TextBlock
from gsv_core.protocol.messages import ToolResultMessage
from gsv_core.providers.base import ModelRequest
from gsv_core.providers.base import ToolSpec

# Chat completions knows minimal..high (some compatible servers nothing above high).
_REASONING_EFFORT = {
    "minimal": "minimal",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "high",
}

# the SDK's own encoding of a JSON body (openai._utils._json.openapi_dumps)
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_FORM = "openai-chat"  # the memo's inputs: what its values are
_WITH_IMAGES = object()  # a memo value: this message is encoded per call, never kept


def encode(value: Any) -> bytes:
    return _ENCODER.encode(value).encode()


class ToolsJson:
    """The tools' JSON, kept while the tool list stays the same: names, descriptions and
    the very schema objects (the tool router hands out one compacted schema per tool
    while it is registered, gateway/tool_router.py)."""

    def __init__(self) -> None:
        self._key: tuple[tuple[str, str, int], ...] = ()
        self._schemas: list[dict[str, Any]] = []  # held: their ids in the key stay theirs
        self._json = b"[]"

    def of(self, tools: list[ToolSpec]) -> bytes:
        key = tuple((tool.name, tool.description, id(tool.parameters)) for tool in tools)
        if key != self._key:
            self._json = encode([_tool(tool) for tool in tools])
            self._key, self._schemas = key, [tool.parameters for tool in tools]
        return self._json


def chat_body(request: ModelRequest, tools: ToolsJson | None = None,
              cache_key: str | None = None) -> bytes:  # fmt: skip
    """The JSON body of a chat completions request (`chat.completions.create`'s fields);
    `cache_key` is sent as `prompt_cache_key`."""
    head: dict[str, Any] = {
        "model": request.model,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    effort = _REASONING_EFFORT.get(request.thinking)
    if effort:
        head["reasoning_effort"] = effort
    if request.max_tokens:
        head["max_completion_tokens"] = request.max_tokens
    if cache_key:
        head["prompt_cache_key"] = cache_key
    parts = [encode(head)[:-1], b',"messages":', messages_json(request)]
    if request.tools:
        parts += [b',"tools":', (tools or ToolsJson()).of(request.tools)]
    parts.append(b"}")
    return b"".join(parts)


def messages_json(request: ModelRequest) -> bytes:
    """The request's chat messages as a JSON array, each message's JSON kept in the
    request's memo when it has one."""
    memo = request.memo
    if memo is None:
        return encode(chat_messages(request.system, request.messages))
    kept = memo.each(request.messages, _message_json, _FORM)
    if _WITH_IMAGES in kept:
        return encode(chat_messages(request.system, request.messages))
    system = [encode(_system_message(request.system))] if request.system else []
    return b"[" + b",".join([*system, *filter(None, kept)]) + b"]"


def chat_messages(system: str, messages: list[Message]) -> list[dict[str, Any]]:
    """Canonical messages as chat messages, the system prompt first."""
    out: list[dict[str, Any]] = [_system_message(system)] if system else []
    tool_images: list[tuple[str, ImageBlock]] = []
    for message in messages:
        if message["role"] != "toolResult" and tool_images:
            out.append(_tool_images_message(tool_images))
            tool_images = []
        mapped = _chat_message(message)
        if mapped is not None:
            out.append(mapped)
        if message["role"] == "toolResult":
            name = message["toolName"]
            images = [b for b in message["content"] if b["type"] == "image"]
            tool_images.extend((name, image) for image in images)
    if tool_images:
        out.append(_tool_images_message(tool_images))
    return out


def _message_json(message: Message) -> Any:
    """One message's chat message as JSON (b"" when it maps to none); `_WITH_IMAGES` for
    a message holding images, encoded with the whole history on each call instead."""
    content = message["content"]
    if not isinstance(content, str) and any(block["type"] == "image" for block in content):
        return _WITH_IMAGES
    mapped = _chat_message(message)
    return encode(mapped) if mapped is not None else b""


def _system_message(system: str) -> dict[str, Any]:
    return {"role": "system", "content": system}


def _chat_message(message: Message) -> dict[str, Any] | None:
    if message["role"] == "user":
        return {"role": "user", "content": _user_content(message["content"])}
    if message["role"] == "assistant":
        return _assistant_message(message)
    if message["role"] == "toolResult":
        return _tool_message(message)
    return None


def _tool(tool: ToolSpec) -> dict[str, Any]:
    function = {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
    return {"type": "function", "function": function}


def _user_content(content: str | list[TextBlock | ImageBlock]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    return [_content_part(block) for block in content]


def _content_part(block: TextBlock | ImageBlock) -> dict[str, Any]:
    if block["type"] == "text":
        return {"type": "text", "text": block["text"]}
    data = block.get("data")
    if not data:
        return {"type": "text", "text": "[image not available]"}
    url = f"data:{block['mimeType']};base64,{data}"
    return {"type": "image_url", "image_url": {"url": url}}


def _assistant_message(message: AssistantMessage) -> dict[str, Any] | None:
    """Text and tool calls; thinking is dropped (chat completions takes no reasoning back)."""
    text = "".join(b["text"] for b in message["content"] if b["type"] == "text")
    calls = [
        {
            "id": block["id"],
            "type": "function",
            "function": {"name": block["name"], "arguments": json.dumps(block["arguments"])},
        }
        for block in message["content"]
        if block["type"] == "toolCall"
    ]
    if not text and not calls:
        return None  # an empty assistant turn is refused by several servers
    mapped: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        mapped["tool_calls"] = calls
    return mapped


def _tool_message(message: ToolResultMessage) -> dict[str, Any]:
    text = "".join(b["text"] for b in message["content"] if b["type"] == "text")
    images = sum(1 for b in message["content"] if b["type"] == "image")
    if not text:
        text = f"(the tool returned {images} image(s), shown next)" if images else "(no output)"
    return {"role": "tool", "tool_call_id": message["toolCallId"], "content": text}


def _tool_images_message(images: list[tuple[str, ImageBlock]]) -> dict[str, Any]:
    """Chat-completions tool messages carry text only, so images a tool returned follow
    the tool messages as one user message (after them: a user message between an
    assistant's tool calls and their results is refused)."""
    names = ", ".join(dict.fromkeys(name for name, _ in images))
    parts = [{"type": "text", "text": f"Images returned by {names}:"}]
    parts.extend(_content_part(image) for _, image in images)
    return {"role": "user", "content": parts}
