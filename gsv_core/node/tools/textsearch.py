"""Grep's search rules and its pure-Python backend.

What counts as a match is defined here once, and the ripgrep backend is held to it:
- a searchable file is a regular file of at most 64 MiB with no NUL byte that decodes as
  UTF-8 (anything else is binary and skipped);
- lines are split on LF only, and one CR before the LF (or at the end) is dropped;
- a line matches when Python `re.search` finds the pattern in it;
- `include` filters on the file *name*; entries named `.git` are skipped (not entered);
- matches are ordered by path components, then line number (the order of a sorted
  depth-first walk, which is also `rg --sort path`).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass

from gsv_core.node.tools.patterns import NameTest
from gsv_core.node.tools.walk import TreeWalker

MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_LINE_CHARS = 200
SKIPPED_DIRS = frozenset({".git"})
_REGEX_SYNTAX = frozenset(".^$*+?{}[]\\|()")


@dataclass(frozen=True)
class Match:
    path: str
    line: int
    content: str

    def to_wire(self) -> dict[str, object]:
        return {"path": self.path, "line": self.line, "content": self.content}


@dataclass(frozen=True)
class GrepQuery:
    """A validated Grep request."""

    regex: re.Pattern[str]
    base: str
    include: NameTest | None = None
    include_globs: tuple[str, ...] = ()
    needle: bytes | None = None  # for a plain-text pattern: files without it are skipped

    def wants(self, path: str) -> bool:
        return self.include is None or bool(self.include(os.path.basename(path)))


def literal_needle(pattern: str) -> bytes | None:
    """The UTF-8 bytes of a pattern without regex syntax, which any match must contain."""
    return None if any(char in _REGEX_SYNTAX for char in pattern) else pattern.encode()


def order_key(base: str, match: Match) -> tuple[tuple[str, ...], int]:
    """Sort key shared by both backends: path components below `base`, then line."""
    relative = os.path.relpath(match.path, base)
    return tuple(relative.split(os.sep)) if relative != "." else (), match.line


def split_lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def searchable_text(path: str, needle: bytes | None = None) -> str | None:
    """The file's text, or None when it is not a searchable text file.

    With `needle`, a file not containing those bytes is also None (it cannot match), and
    is rejected before the NUL scan and the decoding.
    """
    data = _read_regular(path)
    if data is None or (needle is not None and needle not in data) or b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _read_regular(path: str) -> bytes | None:
    """The bytes of a regular file of at most MAX_FILE_BYTES, else None.

    Low-level reads: `open()` costs more than the read itself for small files. O_NONBLOCK
    keeps a FIFO from blocking the open; fstat then refuses it.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            return None
        chunks, held = [], 0
        while chunk := os.read(fd, max(info.st_size - held, 0) + 1):
            chunks.append(chunk)
            held += len(chunk)
            if held > MAX_FILE_BYTES:
                return None  # grew while we read
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def file_matches(query: GrepQuery, path: str) -> Iterator[Match]:
    text = searchable_text(path, query.needle)
    if text is None:
        return
    search = query.regex.search
    for number, line in enumerate(split_lines(text), 1):
        if search(line):
            yield Match(path, number, line[:MAX_LINE_CHARS])


def python_matches(query: GrepQuery, walker: TreeWalker) -> Iterator[Match]:
    """Every match under `query.base` in order, found by walking and reading in Python."""
    files = walker.files(query.base) if os.path.isdir(query.base) else iter([query.base])
    for path in files:
        if query.wants(path):
            yield from file_matches(query, path)
