"""What the chat shows, as plain data: a session's stored messages (session.preview) and
the `chat.tool` events of a run turned into display items, and the one-line texts of a
tool block. No widgets here, so it is tested without a terminal.

Stored shapes (gsv_core.protocol.messages): user {content: str | blocks}, assistant
{content: [text | thinking | toolCall], stopReason, errorMessage?}, toolResult
{toolCallId, toolName, content, isError}, summary {content} (compaction).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from dataclasses import field
from typing import Any

NATIVE_PREFIX = "gsv__"  # the gateway's own tools; `{nodeId}__{tool}` for node tools
TOOL_SEPARATOR = "__"
SUMMARY_LIMIT = 200
# arguments worth showing first, in this order, when a tool has several
_PRIMARY_ARGS = ("command", "path", "file_path", "pattern", "query", "url", "sessionId", "key")
_IMAGE_TEXT = re.compile(r"Image file: (?P<name>.+) \((?P<mime>[^,()]+), (?P<size>\d+) bytes\)")


@dataclass
class ToolView:
    """One tool call as the chat shows it; `ok` is None while it runs."""

    call_id: str
    name: str
    args: dict[str, Any] = field(default_factory=dict)
    ok: bool | None = None
    summary: str = ""
    duration_ms: int | None = None
    image: str | None = None

    @property
    def tool(self) -> str:
        return split_tool(self.name)[0]

    @property
    def where(self) -> str:
        return split_tool(self.name)[1]

    def finish(self, ok: bool, summary: str, duration_ms: int | None = None) -> None:
        self.ok = ok
        self.summary = summary[:SUMMARY_LIMIT]
        self.duration_ms = duration_ms
        self.image = image_note(summary)

    def title(self) -> str:
        """`Read · node-a · README.md · 12 ms` (the state symbol is added by the widget)."""
        parts = [self.tool, self.where]
        brief = args_summary(self.args)
        if brief:
            parts.append(brief)
        if self.ok is False:
            parts.append("failed")
        if self.duration_ms is not None:
            parts.append(format_duration(self.duration_ms))
        return " · ".join(parts)

    def body(self) -> str:
        """The expanded block: arguments, then the result (or the image placeholder)."""
        lines = [f"{key}: {_one_line(value, 200)}" for key, value in self.args.items()]
        if self.ok is None:
            lines.append("running…")
        elif self.image:
            lines.append(self.image)
        elif self.summary:
            lines.append(("error: " if self.ok is False else "→ ") + self.summary)
        return "\n".join(lines) or "(no arguments)"


def split_tool(name: str) -> tuple[str, str]:
    """(tool, where it runs): `node-a__Read` -> (Read, node-a); `gsv__X` -> (X, gateway)."""
    if name.startswith(NATIVE_PREFIX):
        return name.removeprefix(NATIVE_PREFIX), "gateway"
    node, sep, tool = name.partition(TOOL_SEPARATOR)
    if not sep or not node or not tool:
        return name, "?"
    return tool, node


def args_summary(args: dict[str, Any], width: int = 48) -> str:
    """The arguments on one short line: the main one's value, else `key=value` pairs."""
    if not args:
        return ""
    for key in _PRIMARY_ARGS:
        if key in args and isinstance(args[key], str | int | float):
            return _one_line(args[key], width)
    pairs = ", ".join(f"{key}={_one_line(value, 40)}" for key, value in args.items())
    return _shorten(pairs, width)


def _one_line(value: Any, width: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return _shorten(" ".join(text.split()), width)


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def format_duration(ms: int) -> str:
    """Tenths of a second: what a person waiting on a tool can tell apart."""
    return "<0.1 s" if ms < 100 else f"{ms / 1000:.1f} s"


def format_size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def image_note(text: str) -> str | None:
    """The placeholder for an image a Read returned (`Image file: a.png (image/png, 2048
    bytes)` -> `[image a.png · image/png · 2.0 KB]`), or None."""
    match = _IMAGE_TEXT.search(text)
    if match is None:
        return None
    size = format_size(int(match["size"]))
    return f"[image {match['name']} · {match['mime']} · {size}]"


# -- stored messages -------------------------------------------------------------------


@dataclass(frozen=True)
class UserItem:
    text: str
    at: int | None = None  # the stored message's timestamp (epoch ms): what a search hit names


@dataclass(frozen=True)
class AssistantItem:
    text: str
    at: int | None = None


@dataclass(frozen=True)
class NoticeItem:
    text: str
    kind: str = "info"  # info | error


@dataclass(frozen=True)
class ToolItem:
    view: ToolView


Item = UserItem | AssistantItem | NoticeItem | ToolItem


def history_items(messages: list[dict[str, Any]]) -> list[Item]:
    """The display items of stored messages, each tool call settled by its result."""
    items: list[Item] = []
    calls: dict[str, ToolView] = {}
    for message in messages:
        role = message.get("role")
        if role == "user":
            items.append(UserItem(content_text(message.get("content")), _at(message)))
        elif role == "assistant":
            items.extend(_assistant_items(message, calls))
        elif role == "toolResult":
            _settle(message, calls, items)
        elif role == "summary":
            items.append(NoticeItem("Earlier messages were compacted into a summary."))
    return items


def _assistant_items(message: dict[str, Any], calls: dict[str, ToolView]) -> list[Item]:
    items: list[Item] = []
    text = "".join(
        str(block.get("text", ""))
        for block in message.get("content") or []
        if isinstance(block, dict) and block.get("type") == "text"
    )
    if text.strip():
        items.append(AssistantItem(text, _at(message)))
    for block in message.get("content") or []:
        if isinstance(block, dict) and block.get("type") == "toolCall":
            args = block.get("arguments")
            view = ToolView(str(block.get("id")), str(block.get("name")), _dict(args))
            calls[view.call_id] = view
            items.append(ToolItem(view))
    if message.get("stopReason") == "error" and message.get("errorMessage"):
        items.append(NoticeItem(str(message["errorMessage"]), "error"))
    return items


def _settle(message: dict[str, Any], calls: dict[str, ToolView], items: list[Item]) -> None:
    view = calls.get(str(message.get("toolCallId")))
    if view is None:  # its call was compacted away: show the result on its own
        view = ToolView(str(message.get("toolCallId")), str(message.get("toolName", "?")))
        items.append(ToolItem(view))
    view.finish(not message.get("isError"), content_text(message.get("content")))


def content_text(content: Any) -> str:
    """Text of string or block content; images become their placeholder."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "image" and not any("Image file:" in p for p in parts):
            parts.append(f"[image · {block.get('mimeType', '?')}]")
    return "\n".join(part for part in parts if part)


def _at(message: dict[str, Any]) -> int | None:
    stamp = message.get("timestamp")
    return stamp if isinstance(stamp, int) and not isinstance(stamp, bool) else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
