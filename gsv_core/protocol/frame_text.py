"""Text a frame must not carry: lone surrogates, which no UTF-8 writer can
encode (one stored in the config broke every later read), and NUL, which files, processes
and databases refuse. Both can only arrive as JSON escapes (websockets has already checked
the UTF-8), so a cheap search of the raw text guards the walk of the parsed frame.
A sender whose text comes from outside (a node's tool output, file names that are not
UTF-8) passes it through `replace_bad_text` first: each such character becomes U+FFFD,
the character UTF-8 decoders already put in place of bytes they cannot read."""

from __future__ import annotations

import json
import re
from typing import Any

# `\ud800`-`\udfff` or `\u0000` as JSON escapes; a plain search, no parse
_SUSPECT = re.compile(r"\\u(?:[dD][89a-fA-F][0-9a-fA-F]{2}|0000)")
_BAD_CHAR = re.compile("[\x00\ud800-\udfff]")
REPLACEMENT = "\ufffd"
# the request id, read without parsing a frame that cannot be parsed (too deep)
_LEADING_ID = re.compile(r'"id"\s*:\s*("(?:[^"\\]|\\.){1,256}"|-?\d{1,18})')


def may_hold_bad_text(text: str | bytes) -> bool:
    raw = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    return _SUSPECT.search(raw) is not None


def bad_text_path(data: Any) -> str | None:
    """The dotted path of the first key or string with a lone surrogate or NUL."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:  # iterative: a deep frame must not recurse
        path, value = stack.pop()
        if isinstance(value, str):
            if _is_bad(value):
                return path or "(frame)"
        elif isinstance(value, dict):
            for key, child in value.items():
                if _is_bad(key):
                    return f"{path}.(key)" if path else "(key)"
                stack.append((f"{path}.{key}" if path else key, child))
        elif isinstance(value, list):
            stack.extend((f"{path}.{i}", child) for i, child in enumerate(value))
    return None


def _is_bad(text: str) -> bool:
    return _BAD_CHAR.search(text) is not None


def replace_bad_text(data: Any) -> tuple[Any, int]:
    """`data` (JSON values) with every NUL and lone surrogate, in keys and strings, made
    U+FFFD, and how many were replaced; `data` itself when there were none (found by
    the iterative scan first: a clean answer, the common case, is neither copied nor
    walked by recursion)."""
    if bad_text_path(data) is None:
        return data, 0
    count = 0

    def clean(value: Any) -> Any:
        nonlocal count
        if isinstance(value, str):
            if value.isascii() and "\x00" not in value:
                return value  # the common case, without a regex scan
            value, found = _BAD_CHAR.subn(REPLACEMENT, value)
            count += found
            return value
        if isinstance(value, dict):
            return {clean(key): clean(child) for key, child in value.items()}
        if isinstance(value, list | tuple):
            return [clean(child) for child in value]
        return value

    cleaned = clean(data)
    return (cleaned, count) if count else (data, 0)


def _top_level_id(raw: str) -> re.Match[str] | None:
    """The `"id": value` of the top-level object only: an "id" inside params (a stranger's
    text) must not decide whom the error goes to. Strings are skipped whole."""
    depth, i = 0, 0
    while i < len(raw):
        char = raw[i]
        if char == '"':
            if depth == 1 and (match := _LEADING_ID.match(raw, i)):
                return match
            i = _string_end(raw, i)
            continue
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
        i += 1
    return None


def _string_end(raw: str, start: int) -> int:
    """The index after the JSON string that opens at `start` (or the end of `raw`)."""
    i = start + 1
    while i < len(raw) and raw[i] != '"':
        i += 2 if raw[i] == "\\" else 1
    return i + 1


def peek_id(text: str | bytes) -> str | int | None:
    """The frame's id when it can be read and answered with; None otherwise."""
    raw = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    match = _top_level_id(raw[:4096])
    if match is None:
        return None
    value = json.loads(match.group(1))
    if isinstance(value, str) and (not value or _is_bad(value)):
        return None
    return value if isinstance(value, str | int) else None
