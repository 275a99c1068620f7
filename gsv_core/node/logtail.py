"""The last lines of a log file, read from the end so a large log costs little."""

from __future__ import annotations

import os
from pathlib import Path

_BLOCK = 64 * 1024


def tail_lines(path: Path, count: int) -> tuple[list[str], bool]:
    """The last `count` lines of `path` and whether the file holds more lines than that."""
    with path.open("rb") as fh:
        fh.seek(0, os.SEEK_END)
        position = fh.tell()
        data = b""
        # read blocks from the end until we hold one line more than asked (or the start)
        while position > 0 and data.count(b"\n") <= count:
            step = min(_BLOCK, position)
            position -= step
            fh.seek(position)
            data = fh.read(step) + data
    lines = data.decode("utf-8", errors="replace").splitlines()
    truncated = position > 0 or len(lines) > count
    return lines[-count:] if count else [], truncated
