"""A long text as a bounded excerpt: its head and its tail around a marker that says how
many characters were cut there and why, so whoever reads it (a model, a person at an
approval prompt) knows it saw part of the whole. A pasted log's first lines and its last
(where the error usually is) are what is kept.
"""

from __future__ import annotations

from typing import Any

HEAD_SHARE = 2 / 3  # of what is kept, the head's part; the tail gets the rest
MIN_KEEP = 200  # characters kept of a cut text whatever the limit


def excerpt(text: str, limit: int, why: str = "") -> str:
    """`text` itself when at most `limit` characters long, else its head and tail (about
    `limit` characters together) around a note naming how much was cut and `why`."""
    return _excerpt(text, limit, why)[0]


def _excerpt(text: str, limit: int, why: str) -> tuple[str, int]:
    """(the excerpt, the characters cut out of `text`)."""
    keep = max(MIN_KEEP, limit)
    if len(text) <= keep:
        return text, 0
    head = int(keep * HEAD_SHARE)
    tail = keep - head
    cut = len(text) - head - tail
    reason = f": {why}" if why else ""
    note = f"[... {cut:,} of {len(text):,} characters cut here{reason} ...]"
    if cut <= len(note):  # cutting would not make it shorter
        return text, 0
    return f"{text[:head]}\n\n{note}\n\n{text[len(text) - tail :]}", cut


def cut_strings(value: Any, limit: int, why: str = "") -> tuple[Any, int]:
    """`value` (JSON-like: dicts, lists, strings) with its longest strings excerpted so
    that all its strings together hold about `limit` characters: the short ones stay
    whole, the long ones share what is left equally. Returns (value, characters cut);
    `value` itself when nothing was cut."""
    lengths = sorted(len(s) for s in _strings(value))
    cap = _equal_share(lengths, limit)
    if cap is None:
        return value, 0
    cut = 0

    def change(text: str) -> str:
        nonlocal cut
        shorter, removed = _excerpt(text, cap, why)
        cut += removed
        return shorter

    changed = _map_strings(value, change)
    return (changed, cut) if cut > 0 else (value, 0)


def strings_length(value: Any) -> int:
    """The characters of all the strings in `value` (JSON-like)."""
    return sum(len(s) for s in _strings(value))


def _equal_share(lengths: list[int], limit: int) -> int | None:
    """The most each string may keep so that they add up to `limit` (the short ones
    whole), or None when they fit already. `lengths` is sorted."""
    if sum(lengths) <= limit:
        return None
    left = limit
    for i, length in enumerate(lengths):
        share = left // (len(lengths) - i)
        if length > share:
            return share
        left -= length
    return None


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _map_strings(value: Any, change: Any) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {k: _map_strings(v, change) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_strings(v, change) for v in value]
    return value
