"""Parts of a file's text, so an agent can read a large file without loading it whole
(adopted from the peer catalog's artifact reader): a line range, search hits with context lines,
or the value at a JSON path. Pure functions over the text; errors are 400s that say what
to change.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from gsv_core.errors import InvalidParams

MAX_CONTEXT_LINES = 50
MAX_SEARCH_MATCHES = 200


@dataclass(frozen=True)
class ReadQuery:
    """What part of a file to return; all None means the whole file."""

    start_line: int | None = None  # 1-based, inclusive
    end_line: int | None = None
    search: str | None = None  # case-insensitive substring
    context_lines: int = 2
    json_path: str | None = None

    @property
    def whole(self) -> bool:
        return (
            self.start_line is None
            and self.end_line is None
            and self.search is None
            and self.json_path is None
        )

    def check(self) -> None:
        if self.json_path is not None and (
            self.start_line is not None or self.end_line is not None or self.search is not None
        ):
            raise InvalidParams("jsonPath cannot be combined with startLine, endLine or search")
        if self.search is not None and not self.search:
            raise InvalidParams("search must not be empty")
        for name, value in (("startLine", self.start_line), ("endLine", self.end_line)):
            if value is not None and value < 1:
                raise InvalidParams(f"{name} must be 1 or more (lines are numbered from 1)")
        if self.start_line and self.end_line and self.end_line < self.start_line:
            raise InvalidParams(f"endLine {self.end_line} is before startLine {self.start_line}")
        if not 0 <= self.context_lines <= MAX_CONTEXT_LINES:
            raise InvalidParams(f"contextLines must be between 0 and {MAX_CONTEXT_LINES}")


def excerpt(text: str, query: ReadQuery, path: str) -> dict[str, Any]:
    """The result fields for `query` over a file's text (`content` plus what it covers)."""
    if query.json_path is not None:
        return {"content": _json_at(text, query.json_path, path), "jsonPath": query.json_path}
    lines = text.splitlines()
    first, last = _line_range(lines, query, path)
    if query.search is None:
        return {
            "content": "\n".join(lines[first - 1 : last]),
            "startLine": first,
            "endLine": last,
            "totalLines": len(lines),
        }
    return _search(lines, first, last, query)


def _line_range(lines: list[str], query: ReadQuery, path: str) -> tuple[int, int]:
    total = len(lines)
    first = query.start_line or 1
    if first > max(total, 1):
        raise InvalidParams(f"startLine {first} is past the end of {path} ({total} lines)")
    last = min(query.end_line or total, total)
    return first, last


def _search(lines: list[str], first: int, last: int, query: ReadQuery) -> dict[str, Any]:
    """grep -n style: `12:hit` for matching lines, `11-context` around them, `--` between
    groups that are not adjacent."""
    needle = (query.search or "").casefold()
    hits = [n for n in range(first, last + 1) if needle in lines[n - 1].casefold()]
    truncated = len(hits) > MAX_SEARCH_MATCHES
    hits = hits[:MAX_SEARCH_MATCHES]
    shown: list[str] = []
    previous = 0
    context = query.context_lines
    hit_set = set(hits)
    for number in _with_context(hits, context, first, last):
        if previous and number > previous + 1:
            shown.append("--")
        mark = ":" if number in hit_set else "-"
        shown.append(f"{number}{mark}{lines[number - 1]}")
        previous = number
    result: dict[str, Any] = {
        "content": "\n".join(shown),
        "matches": len(hits),
        "totalLines": len(lines),
    }
    if truncated:
        result["truncated"] = True
    return result


def _with_context(hits: list[int], context: int, first: int, last: int) -> list[int]:
    numbers: set[int] = set()
    for hit in hits:
        numbers.update(range(max(first, hit - context), min(last, hit + context) + 1))
    return sorted(numbers)


# -- JSON paths --------------------------------------------------------------------------
# `data.items[0].name`, `$.a["key with.dots"]`, `list[-1]`; digits after a dot index lists
_NAME = re.compile(r"[^.\[\]]+")
_INDEX = re.compile(r"\[\s*(-?\d+)\s*\]")
_QUOTED = re.compile(r"""\[\s*(["'])(.*?)\1\s*\]""")


def parse_json_path(expr: str) -> list[str | int]:
    """The steps of a dot/bracket path; raises InvalidParams on bad syntax."""
    rest = expr.strip()
    rest = rest[1:] if rest.startswith("$") else rest
    steps: list[str | int] = []
    pos = 0
    while pos < len(rest):
        if rest[pos] == "." and pos + 1 < len(rest) and rest[pos + 1] not in ".[":
            pos += 1
        if match := _INDEX.match(rest, pos):
            steps.append(int(match.group(1)))
        elif match := _QUOTED.match(rest, pos):
            steps.append(match.group(2))
        elif (match := _NAME.match(rest, pos)) and (pos == 0 or rest[pos - 1] == "."):
            steps.append(match.group(0))
        else:
            raise InvalidParams(
                f"invalid jsonPath {expr!r} at character {pos + 1}: use dots and brackets, "
                'e.g. data.items[0].name or a["key"]'
            )
        pos = match.end()
    return steps


def _json_at(text: str, expr: str, path: str) -> str:
    steps = parse_json_path(expr)
    try:
        value: Any = json.loads(text)
    except ValueError as exc:
        raise InvalidParams(
            f"{path} is not valid JSON ({exc}); jsonPath needs a JSON file"
        ) from None
    walked = "$"
    for step in steps:
        value = _step(value, step, walked, expr)
        walked += f"[{step}]" if isinstance(step, int) else f".{step}"
    return json.dumps(value, indent=2, ensure_ascii=False)


def _step(value: Any, step: str | int, walked: str, expr: str) -> Any:
    if isinstance(value, list):
        index = step if isinstance(step, int) else int(step) if step.lstrip("-").isdigit() else None
        if index is None:
            raise InvalidParams(f"jsonPath {expr!r}: {walked} is a list; index it with [n]")
        if not -len(value) <= index < len(value):
            raise InvalidParams(
                f"jsonPath {expr!r}: index {index} is out of range at {walked} "
                f"(length {len(value)})"
            )
        return value[index]
    if isinstance(value, dict):
        key = str(step)
        if key not in value:
            raise InvalidParams(f"jsonPath {expr!r}: no key {key!r} at {walked}")
        return value[key]
    raise InvalidParams(f"jsonPath {expr!r}: {walked} is a {type(value).__name__}, not a container")
