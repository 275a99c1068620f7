"""Grep's search rules and its pure-Python backend.

What counts as a match is defined here once, and the ripgrep backend is held to it:
- a searchable file is a regular file of at most 64 MiB with no NUL byte that decodes as
  UTF-8 (anything else is binary and skipped);
- lines are split on LF only, and one CR before the LF (or at the end) is dropped;
- a line matches when Python `re.search` finds the pattern in it;
- `include` filters on the file *name*; entries named `.git` are skipped (not entered);
- matches are ordered by path components, then line number (the order of a sorted
  depth-first walk, which is also `rg --sort path`);
- gsv's secret files on this machine (secret store, config, database) are never
  searched, wherever a symlink met on the way leads (`secret_files`).
"""

from __future__ import annotations

import os
import re
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from gsv_core.approval.protected import protected_files
from gsv_core.node.tools.patterns import NameTest
from gsv_core.node.tools.textstream import PIECE_BYTES
from gsv_core.node.tools.textstream import is_searchable_stream
from gsv_core.node.tools.textstream import matching_lines
from gsv_core.node.tools.walk import TreeWalker
from gsv_core.paths import resolve_paths

MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_LINE_CHARS = 200
SKIPPED_DIRS = frozenset({".git"})
_REGEX_SYNTAX = frozenset(".^$*+?{}[]\\|()")


@dataclass(frozen=True)
class Match:
    path: str
    line: int
    content: str
    cut: bool = False  # the line is longer than `content`

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


def secret_files() -> frozenset[str]:
    """The real paths of gsv's secret files on this machine. The node's guard refuses a
    Grep naming them or a directory above them, but a walk that follows a symlink in the
    workspace (`config -> ~/.config`) meets them under other names: their real path
    gives them away."""
    paths = resolve_paths()
    named = protected_files(paths, paths.database, ()).secret_paths
    absolute = [path for path in named if os.path.isabs(path)]
    return frozenset(absolute) | {os.path.realpath(path) for path in absolute}


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


def is_searchable(path: str, needle: bytes | None = None) -> bool:
    """True when `path` is a searchable text file (holding `needle`, when given)."""
    opened = _open_regular(path)
    if opened is None:
        return False
    fd, size = opened
    if size <= PIECE_BYTES:
        return _small_text(_read_small(fd, size), needle) is not None
    with os.fdopen(fd, "rb") as handle:
        return is_searchable_stream(handle, needle)


def _open_regular(path: str) -> tuple[int, int] | None:
    """(descriptor, size) of a regular file of at most MAX_FILE_BYTES, else None.

    Low-level open: `open()` costs more than the read itself for small files. O_NONBLOCK
    keeps a FIFO from blocking the open; fstat then refuses it.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode) and info.st_size <= MAX_FILE_BYTES:
            return fd, info.st_size
    except OSError:
        pass
    os.close(fd)
    return None


def _read_small(fd: int, size: int) -> bytes | None:
    """The bytes of a file of at most PIECE_BYTES, in one read (the common case: cheaper
    than a buffered file); None when it grew past that. Closes `fd`."""
    chunks, held = [], 0
    try:
        while chunk := os.read(fd, max(size - held, 0) + 1):
            chunks.append(chunk)
            held += len(chunk)
            if held > PIECE_BYTES:
                return None
    except OSError:
        return None
    finally:
        os.close(fd)
    return b"".join(chunks)


def _small_text(data: bytes | None, needle: bytes | None) -> str | None:
    """The text of a small file's bytes, or None when it is not searchable."""
    if data is None or (needle is not None and needle not in data) or b"\x00" in data:
        return None  # the needle first: the cheapest way to skip most files
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def file_matches(
    query: GrepQuery, path: str, cancelled: threading.Event | None = None
) -> Iterator[Match]:
    """The file's matches in line order. A small file (the common case) is read whole;
    a bigger one is streamed in bounded memory (`textstream`)."""
    opened = _open_regular(path)
    if opened is None:
        return
    fd, size = opened
    if size <= PIECE_BYTES:
        text = _small_text(_read_small(fd, size), query.needle)
        if text is not None:
            search = query.regex.search
            for number, line in enumerate(split_lines(text), 1):
                if search(line):
                    yield Match(path, number, line[:MAX_LINE_CHARS], len(line) > MAX_LINE_CHARS)
        return
    never = cancelled or threading.Event()
    with os.fdopen(fd, "rb") as handle:
        if not is_searchable_stream(handle, query.needle, never):
            return
        handle.seek(0)
        for number, content, cut in matching_lines(query.regex, handle, never, MAX_LINE_CHARS):
            yield Match(path, number, content, cut)


def python_matches(query: GrepQuery, walker: TreeWalker) -> Iterator[Match]:
    """Every match under `query.base` in order, found by walking and reading in Python."""
    files = walker.files(query.base) if os.path.isdir(query.base) else iter([query.base])
    for path in files:
        if query.wants(path):
            yield from file_matches(query, path, walker.cancelled)
