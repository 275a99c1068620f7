"""Bash's brace expansion (`a{b,c}`, `{1..3}`), for the approval reader's secret check:
`cat ~/.config/gsv/{secrets,x}.toml` reads the secrets file, so the check must see the
words bash makes. Beyond MAX_BRACE_WORDS (or MAX_BRACE_DEPTH levels) a group stands as a `*`
pattern instead, which the check matches cautiously."""

from __future__ import annotations

import itertools
import re
from bisect import bisect_left

MAX_BRACE_DEPTH = 6  # groups inside groups read before a group stands as a `*`
MAX_BRACE_WORDS = 64
_BRACE_MARKS = re.compile(r"[{},]")
_SEQUENCE = re.compile(
    r"([-+]?\d+)\.\.([-+]?\d+)(?:\.\.([-+]?\d+))?|([A-Za-z])\.\.([A-Za-z])(?:\.\.([-+]?\d+))?"
)
# a group: its closing `}`, its own commas, and for `{x..y}` the words it makes
_Group = tuple[int, list[int], list[str] | None]


def brace_words(parts: list[str], literal: set[int]) -> tuple[str, ...]:
    """The words bash's brace expansion makes of a word (none: it makes none). Beyond
    MAX_BRACE_WORDS every outermost group becomes a `*`, one pattern standing for all of
    them (the secret check matches patterns). Linear in the word's length, plus the words
    made."""
    text = "".join(parts)
    special = bytearray(len(text))  # 1 where a character is unquoted
    pos = 0
    for index, part in enumerate(parts):
        if index not in literal:
            special[pos : pos + len(part)] = b"\x01" * len(part)
        pos += len(part)
    groups = _brace_groups(text, special)
    if not groups:
        return ()
    starts = sorted(groups)
    made = _expand(text, groups, starts, 0, len(text))
    if made is not None:
        return tuple(made)
    collapsed, pos, k = [], 0, 0
    while k < len(starts):  # the outermost groups, each a `*`
        collapsed.append(text[pos : starts[k]] + "*")
        pos = groups[starts[k]][0] + 1
        k = bisect_left(starts, pos)
    return ("".join(collapsed) + text[pos:],)


def _brace_groups(text: str, special: bytearray) -> dict[int, _Group]:
    """Unquoted `{...}` with a comma of their own, or a sequence `{x..y[..step]}`, by where
    they open (matched as bash does: the innermost `{` first)."""
    close: dict[int, int] = {}
    commas: dict[int, list[int]] = {}
    stack: list[int] = []
    for mark in _BRACE_MARKS.finditer(text):
        at = mark.start()
        if not special[at]:
            continue
        if text[at] == "{":
            stack.append(at)
        elif text[at] == "}":
            if stack:
                close[stack.pop()] = at
        elif stack:
            commas.setdefault(stack[-1], []).append(at)
    groups: dict[int, _Group] = {}
    for start, end in close.items():
        if commas.get(start):
            groups[start] = (end, commas[start], None)
        elif end - start < 48 and all(special[start:end]):  # (a sequence is short)
            sequence = _sequence(text[start + 1 : end])
            if sequence is not None:
                groups[start] = (end, [], sequence)
    return groups


def _sequence(inside: str) -> list[str] | None:
    """`1..3` -> 1 2 3, `a..e..2` -> a c e, `01..3` -> 01 02 03; None when not a sequence,
    and a `*` (standing for any word) when longer than MAX_BRACE_WORDS."""
    found = _SEQUENCE.fullmatch(inside)
    if found is None:
        return None
    numbers, first, last = found.group(1) is not None, found.group(1, 4), found.group(2, 5)
    step = abs(int(found.group(3) or found.group(6) or 1)) or 1
    low, high = (int(first[0]), int(last[0])) if numbers else (ord(first[1]), ord(last[1]))
    if abs(high - low) // step >= MAX_BRACE_WORDS:
        return ["*"]
    values = range(low, high + 1, step) if low <= high else range(low, high - 1, -step)
    if not numbers:
        return [chr(v) for v in values]
    padded = first[0].lstrip("+-").startswith("0") or last[0].lstrip("+-").startswith("0")
    width = max(len(first[0]), len(last[0])) if padded else 0
    return [f"{v:0{width}d}" for v in values]


def _expand(
    text: str, groups: dict[int, _Group], starts: list[int], low: int, high: int, depth: int = 0
) -> list[str] | None:
    """The words text[low:high] makes, or None when more than MAX_BRACE_WORDS or nested
    deeper than MAX_BRACE_DEPTH (each level copies at most MAX_BRACE_WORDS words)."""
    if depth > MAX_BRACE_DEPTH:
        return None
    made, pos = [""], low
    k = bisect_left(starts, low)
    while k < len(starts) and starts[k] < high:
        start = starts[k]
        end, commas, sequence = groups[start]
        options = sequence
        if options is None:
            options = []
            bounds = [start, *commas, end]
            for left, right in itertools.pairwise(bounds):
                inner = _expand(text, groups, starts, left + 1, right, depth + 1)
                if inner is None or len(options) + len(inner) > MAX_BRACE_WORDS:
                    return None
                options.extend(inner)
        if len(made) * len(options) > MAX_BRACE_WORDS:
            return None
        made = [m + text[pos:start] + o for m in made for o in options]
        pos = end + 1
        k = bisect_left(starts, pos)
    return [m + text[pos:high] for m in made]
