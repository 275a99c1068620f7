"""Canonical chat messages: the shapes stored in a session's history, sent in `chat`
events and handed to providers (after pi-ai's Message JSON).

Messages are plain JSON objects, typed here with TypedDicts, so storing, broadcasting and
archiving them needs no conversion:

    user        {role:"user", content: str | [text | image], timestamp}
    assistant   {role:"assistant", content:[text | thinking | toolCall], provider, model,
                 usage, stopReason, errorMessage?, timestamp}
    toolResult  {role:"toolResult", toolCallId, toolName, content:[text | image], isError,
                 timestamp}
    summary     {role:"summary", content: str, timestamp, ...}   (compaction, sessions issue)

Images in stored messages are references `{type:"image", mediaPath, mimeType}` into the
gateway's media store; they are turned into inline `{type:"image", data, mimeType}` just
before a model call.
"""

from __future__ import annotations

from typing import Any
from typing import Literal
from typing import NotRequired
from typing import TypedDict


class TextBlock(TypedDict):
    type: Literal["text"]
    text: str


class ImageBlock(TypedDict):
    type: Literal["image"]
    mimeType: str
    data: NotRequired[str]  # base64, inline (only in flight to a provider or from a tool)
    mediaPath: NotRequired[str]  # stored reference


class ThinkingBlock(TypedDict):
    type: Literal["thinking"]
    thinking: str
    signature: NotRequired[str]  # providers that sign reasoning need it echoed back


class ToolCallBlock(TypedDict):
    type: Literal["toolCall"]
    id: str
    name: str
    arguments: dict[str, Any]


class Usage(TypedDict):
    input: int
    output: int
    total: int
    cacheRead: NotRequired[int]
    cacheWrite: NotRequired[int]


class UserMessage(TypedDict):
    role: Literal["user"]
    content: str | list[TextBlock | ImageBlock]
    timestamp: int


class AssistantMessage(TypedDict):
    role: Literal["assistant"]
    content: list[TextBlock | ThinkingBlock | ToolCallBlock]
    provider: str
    model: str
    usage: Usage
    stopReason: str
    timestamp: int
    errorMessage: NotRequired[str]


class ToolResultMessage(TypedDict):
    role: Literal["toolResult"]
    toolCallId: str
    toolName: str
    content: list[TextBlock | ImageBlock]
    isError: bool
    timestamp: int


Message = UserMessage | AssistantMessage | ToolResultMessage

STOP_END = "stop"
STOP_TOOL_USE = "toolUse"
STOP_LENGTH = "length"


def empty_usage() -> Usage:
    return {"input": 0, "output": 0, "total": 0}


def add_usage(total: Usage, more: Usage) -> Usage:
    """The sum of two usages (cache fields kept when either reports them)."""
    summed: Usage = {
        "input": total["input"] + more["input"],
        "output": total["output"] + more["output"],
        "total": total["total"] + more["total"],
    }
    cache_read = total.get("cacheRead", 0) + more.get("cacheRead", 0)
    cache_write = total.get("cacheWrite", 0) + more.get("cacheWrite", 0)
    if cache_read:
        summed["cacheRead"] = cache_read
    if cache_write:
        summed["cacheWrite"] = cache_write
    return summed


def user_message(text: str, timestamp: int, images: list[ImageBlock] | None = None) -> UserMessage:
    if not images:
        return {"role": "user", "content": text, "timestamp": timestamp}
    blocks: list[TextBlock | ImageBlock] = [{"type": "text", "text": text}] if text else []
    return {"role": "user", "content": [*blocks, *images], "timestamp": timestamp}


def text_of(message: Any) -> str:
    """The text a person would read: text blocks joined (or string content)."""
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        block.get("text", "")
        for block in content
        if isinstance(block, dict) and block.get("type") == "text"
    )


def tool_calls(message: Any) -> list[ToolCallBlock]:
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return []
    calls: list[ToolCallBlock] = [
        block  # type: ignore[misc]  # shape checked by the "type" tag
        for block in content
        if isinstance(block, dict) and block.get("type") == "toolCall"
    ]
    return calls
