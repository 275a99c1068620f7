"""Which workspace files are notes, and how a note is cut into chunks a hit can point at
(a heading starts a chunk; a chunk ends at a blank line once it is long enough).

Notes of an agent, relative to its folder: MEMORY.md, USER.md, every `.md` under
`memory/`, and the paths or glob patterns the owner lists in `memory.notes`.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass

ROOT_NOTES = ("MEMORY.md", "USER.md")
NOTES_DIR = "memory"
CHUNK_LINES = 12  # a chunk closes at the next blank line past this many lines
MAX_CHUNK_LINES = 40  # and in any case at this many


@dataclass(frozen=True)
class Chunk:
    line_start: int  # 1-based
    line_end: int  # inclusive
    text: str


def is_note(path: str, extra: Sequence[str] = ()) -> bool:
    """Whether the agent-relative `path` is a note."""
    if path in ROOT_NOTES:
        return True
    if path.startswith(NOTES_DIR + "/") and path.endswith(".md"):
        return True
    return any(fnmatch.fnmatchcase(path, pattern) for pattern in extra)


def chunks(text: str) -> list[Chunk]:
    """The note's chunks, in order; blank-only chunks are dropped."""
    found: list[Chunk] = []
    lines = text.splitlines()
    start = 0
    for number, line in enumerate(lines):
        length = number - start
        heading = line.startswith("#") and length > 0
        full = (not line.strip() and length >= CHUNK_LINES) or length >= MAX_CHUNK_LINES
        if heading or full:
            _close(found, lines, start, number)
            start = number
    _close(found, lines, start, len(lines))
    return found


def _close(found: list[Chunk], lines: list[str], start: int, end: int) -> None:
    body = "\n".join(lines[start:end]).strip()
    if body:
        found.append(Chunk(start + 1, end, body))
