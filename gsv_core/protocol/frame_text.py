"""Text a frame must not carry: lone surrogates, which no UTF-8 writer can
encode (one stored in the config broke every later read), and NUL, which files, processes
and databases refuse. Both can only arrive as JSON escapes (websockets has already checked
the UTF-8), so a cheap search of the raw text guards the walk of the parsed frame."""

from __future__ import annotations

import json
import re
from typing import Any

# `\ud800`-`\udfff` or `\u0000` as JSON escapes; a plain search, no parse
_SUSPECT = re.compile(r"\\u(?:[dD][89a-fA-F][0-9a-fA-F]{2}|0000)")
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
    return "\x00" in text or any("\ud800" <= c <= "\udfff" for c in text)


def peek_id(text: str | bytes) -> str | int | None:
    """The frame's id when it can be read and answered with; None otherwise."""
    raw = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    match = _LEADING_ID.search(raw[:4096])
    if match is None:
        return None
    value = json.loads(match.group(1))
    if isinstance(value, str) and (not value or _is_bad(value)):
        return None
    return value if isinstance(value, str | int) else None
