"""Glob patterns as Glob and Grep's `include` understand them.

fnmatch semantics per path segment (`*`, `?`, `[..]`, `[!..]`, case-sensitive, dotfiles
match like any other name), `**` as a whole segment for any number of directories, and
shell-style brace expansion (`*.{py,md}`, nested, at most 256 alternatives) on top, which
the original lacked.
"""

from __future__ import annotations

import fnmatch
import itertools
import re
from collections import deque
from collections.abc import Callable

MAX_ALTERNATIVES = 256
_MAGIC = frozenset("*?[")


class PatternError(ValueError):
    """A pattern that cannot be used (too many brace alternatives)."""


def expand_braces(pattern: str) -> list[str]:
    """`"src/*.{py,md}"` -> `["src/*.py", "src/*.md"]`; braces without a comma stay literal."""
    done: list[str] = []
    pending = deque([pattern])
    while pending:
        current = pending.popleft()
        group = _first_group(current)
        if group is None:
            done.append(current)
            continue
        start, end, options = group
        pending.extend(current[:start] + option + current[end + 1 :] for option in options)
        if len(done) + len(pending) > MAX_ALTERNATIVES:
            raise PatternError(
                f"pattern '{pattern}' expands to more than {MAX_ALTERNATIVES} alternatives"
            )
    return done


def _first_group(pattern: str) -> tuple[int, int, list[str]] | None:
    """The first `{a,b}` group: its start, end and top-level options."""
    for start, char in enumerate(pattern):
        if char != "{":
            continue
        depth, cuts = 0, [start]
        for index in range(start, len(pattern)):
            if pattern[index] == "{":
                depth += 1
            elif pattern[index] == "}":
                depth -= 1
                if depth == 0:
                    if len(cuts) == 1:
                        break  # "{x}" has no alternatives: literal text
                    cuts.append(index)
                    return (
                        start,
                        index,
                        [pattern[a + 1 : b] for a, b in itertools.pairwise(cuts)],
                    )
            elif pattern[index] == "," and depth == 1:
                cuts.append(index)
    return None


def has_magic(segment: str) -> bool:
    return any(char in _MAGIC for char in segment)


NameTest = Callable[[str], object]  # truthy when the name matches


def name_matcher(patterns: list[str]) -> NameTest:
    """Does a file *name* match any of the (brace-expanded) patterns? (truthy if so)"""
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns)).match


SegmentMatcher = NameTest | None  # None stands for `**`


def compile_segments(pattern: str) -> list[SegmentMatcher]:
    """One matcher per `/`-separated segment of a glob; `**` becomes None."""
    matchers: list[SegmentMatcher] = []
    for segment in pattern.split("/"):
        if not segment:
            continue
        if segment == "**":
            if matchers and matchers[-1] is None:
                continue  # "**/**" is just "**"
            matchers.append(None)
        elif has_magic(segment):
            matchers.append(name_matcher([segment]))
        else:
            matchers.append(segment.__eq__)
    return matchers
