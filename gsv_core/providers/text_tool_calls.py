"""Tool calls written as text, for models that cannot make native ones
(`providers.<name>.toolCalls: text`, docs/models.md#tool-calls).

The convention, all of it pure: the catalogue the system prompt gains (names,
descriptions, JSON schemas and the one shape to answer with), the parser that reads a
reply as a call, and how a call and its result are written back into the history.

The parser is strict on purpose: a small model that *talks about* a tool call (quotes an
example, explains the format, lists two) must not run anything. A reply is a call only
when the whole of it, trimmed and at most inside one ```json fence, is one JSON object
`{"name": ..., "arguments": {...}}` naming an offered tool with an object of arguments.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gsv_core.providers.base import ToolSpec

CALL_KEYS = frozenset({"name", "arguments"})
# one fence around the whole reply: ``` or ```json, then the body, then ``` at the end
_FENCE = re.compile(r"```(?:json)?[ \t]*\n(?P<body>.*?)\n?[ \t]*```", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class TextToolCall:
    name: str
    arguments: dict[str, Any]


class _Refused(ValueError):
    """The reply is not exactly one call (a duplicate key, NaN, nesting too deep)."""


def parse_text_tool_call(reply: str, offered: Collection[str]) -> TextToolCall | None:
    """The call `reply` is, or None when it is anything else (module docstring)."""
    body = _unfenced(reply.strip())
    if body is None or not (body.startswith("{") and body.endswith("}")):
        return None
    try:
        value = json.loads(body, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or set(value) != CALL_KEYS:
        return None
    name, arguments = value["name"], value["arguments"]
    if not isinstance(name, str) or name not in offered or not isinstance(arguments, dict):
        return None
    return TextToolCall(name, arguments)


def _unfenced(text: str) -> str | None:
    """`text` without the one fence around it (None: a fence that does not close at
    the end). A fence inside the JSON's strings is left to the JSON parser, which
    refuses anything after the one object."""
    if not text.startswith("```"):
        return text
    match = _FENCE.fullmatch(text)
    return match["body"].strip() if match else None


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(keys) != len(set(keys)):
        raise _Refused("a key given twice")  # which one would win is the model's guess
    return dict(pairs)


def _no_constant(word: str) -> Any:
    raise _Refused(f"{word} is not JSON")


def call_text(name: str, arguments: dict[str, Any]) -> str:
    """A call as the model writes it (and reads it back in the history)."""
    return json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)


def result_text(name: str, output: str, is_error: bool) -> str:
    """A tool's result as the next user turn tells it to the model."""
    status = "failed" if is_error else "returned"
    return f"[tool result] {name} {status}:\n{output or '(no output)'}"


def catalogue(tools: Sequence[ToolSpec]) -> str:
    """The system prompt's section offering `tools` to a model that calls them in text."""
    lines = [
        "## Calling tools",
        "You can call a tool. To call one, reply with ONLY this JSON object, no other words "
        "and no second call:",
        '{"name": "<tool name>", "arguments": {<arguments, as the tool\'s schema says>}}',
        "The tool's result comes back in the next message, starting with [tool result]. "
        "When you need no tool, answer in plain words.",
        "",
        "Tools:",
    ]
    for tool in tools:
        schema = json.dumps(tool.parameters, ensure_ascii=False, separators=(",", ":"))
        lines.append(f"- {tool.name}: {tool.description.strip()}\n  arguments schema: {schema}")
    return "\n".join(lines)
