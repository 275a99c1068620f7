"""Stored session messages as readable plain text (for `gsv sessions preview`)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

ARGS_MAX = 120
RESULT_MAX = 400


def render_messages(messages: list[dict[str, Any]]) -> str:
    return "".join(render_message(message) for message in messages)


def render_message(message: dict[str, Any]) -> str:
    role = message.get("role", "?")
    when = _time(message.get("timestamp"))
    if role == "user":
        return f"── you{when}\n{_text(message.get('content'))}\n\n"
    if role == "assistant":
        return _assistant(message, when)
    if role == "toolResult":
        marker = " (error)" if message.get("isError") else ""
        body = _cut(_text(message.get("content")), RESULT_MAX)
        return f"   ↳ {message.get('toolName', '?')} result{marker}: {body}\n\n"
    if role == "summary":
        count = message.get("compactedMessages", "?")
        return f"── summary of {count} earlier messages{when}\n{message.get('content', '')}\n\n"
    return f"── {role}{when}\n{_text(message.get('content'))}\n\n"


def _assistant(message: dict[str, Any], when: str) -> str:
    if message.get("stopReason") == "error":
        return f"── agent{when}\n[error] {message.get('errorMessage', '')}\n\n"
    lines = [f"── agent{when}"]
    for block in message.get("content") or []:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and block.get("text", "").strip():
            lines.append(block["text"])
        elif kind == "toolCall":
            args = _cut(json.dumps(block.get("arguments", {}), ensure_ascii=False), ARGS_MAX)
            lines.append(f"   → {block.get('name')} {args}")
    return "\n".join(lines) + "\n\n"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            parts.append(block.get("text", ""))
        elif block.get("type") == "image":
            parts.append(f"[image {block.get('mimeType', '')}]")
    return "\n".join(parts)


def _cut(text: str, limit: int) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "…"


def _time(timestamp: Any) -> str:
    if not isinstance(timestamp, int) or timestamp <= 0:
        return ""
    moment = dt.datetime.fromtimestamp(timestamp / 1000).astimezone()
    return f" · {moment:%Y-%m-%d %H:%M}"
