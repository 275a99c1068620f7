"""Reading a text file for Grep in bounded memory, whatever its size or line length.

A file is read in pieces of at most PIECE_BYTES: one pass checks it is searchable (no
NUL byte, valid UTF-8, holding the needle when there is one), a second yields its
matching lines. A line longer than a piece is never held whole: it is searched in
windows of about one piece that overlap by WINDOW_OVERLAP characters, so a match on a
16 MB one-line file costs a few megabytes, not a multiple of the line. The windows
differ from a whole-line search only for matches longer than the overlap: one that
spans two windows is not found, one that reaches a window's end is trusted (the Grep
tool's description says so).
"""

from __future__ import annotations

import codecs
import re
import threading
from collections.abc import Iterator
from typing import BinaryIO

from gsv_core.node.tools.base import check_cancelled

PIECE_BYTES = 1 << 20
WINDOW_OVERLAP = 64 * 1024


def is_searchable_stream(
    handle: BinaryIO, needle: bytes | None, cancelled: threading.Event | None = None
) -> bool:
    """True when the rest of `handle` has no NUL, decodes as UTF-8 and holds `needle`."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    found = needle is None
    keep = len(needle) - 1 if needle else 0
    tail = b""
    try:
        while chunk := handle.read(PIECE_BYTES):
            if cancelled is not None:
                check_cancelled(cancelled)
            if b"\x00" in chunk:
                return False
            if needle is not None and not found:
                # the needle may straddle two pieces: look across the seam too
                found = needle in chunk or needle in tail + chunk[:keep]
                tail = chunk[-keep:] if keep else b""
            decoder.decode(chunk)
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return found


def matching_lines(
    regex: re.Pattern[str], handle: BinaryIO, cancelled: threading.Event, keep_chars: int
) -> Iterator[tuple[int, str, bool]]:
    """(line number, its first `keep_chars` characters, whether it was cut) for each
    line of `handle` that `regex` finds something in; lines split on LF, one CR dropped."""
    number = 0
    try:
        while piece := handle.readline(PIECE_BYTES):
            check_cancelled(cancelled)
            number += 1
            if _whole(piece):
                line = piece.decode("utf-8").removesuffix("\n").removesuffix("\r")
                if regex.search(line):
                    yield number, line[:keep_chars], len(line) > keep_chars
            elif (prefix := _huge_line_match(regex, piece, handle, cancelled)) is not None:
                yield number, prefix[:keep_chars], True
    except UnicodeDecodeError:
        return  # the file changed since it was checked: it is no longer text


def _whole(piece: bytes) -> bool:
    """True when `piece` is a complete line (it ends the line or the file)."""
    return piece.endswith(b"\n") or len(piece) < PIECE_BYTES


def _huge_line_match(
    regex: re.Pattern[str], first: bytes, handle: BinaryIO, cancelled: threading.Event
) -> str | None:
    """The start of a line too long to hold, read on from `first`, if `regex` matches in
    it; the rest of the line is consumed either way."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    window = decoder.decode(first)
    prefix = window[:WINDOW_OVERLAP]  # what the caller keeps is shorter
    found, start, piece = False, 0, first
    while True:
        check_cancelled(cancelled)
        following = b"" if _whole(piece) else handle.readline(PIECE_BYTES)
        final = not following
        if final:
            window += decoder.decode(b"", final=True)
            window = window.removesuffix("\n").removesuffix("\r")
        found = found or _window_matches(regex, window, start, final)
        if final:
            return prefix if found else None
        # one character more than the overlap, searched from 1: `^` cannot match there,
        # and a match deferred by `_window_matches` starts inside the new window
        window = window[-(WINDOW_OVERLAP + 1) :] + decoder.decode(following)
        start, piece = 1, following


def _window_matches(regex: re.Pattern[str], window: str, start: int, final: bool) -> bool:
    found = regex.search(window, start)
    if found is None:
        return False
    if final or found.end() < len(window):
        return True
    # It reaches the window's end, where the line goes on: `$`, `\b` or a look-ahead may
    # have matched only because the text stops. A short one is left to the next window,
    # which holds it whole; one longer than the overlap cannot be checked and is trusted.
    return found.start() < len(window) - WINDOW_OVERLAP
