"""Bounded capture of a process's merged stdout and stderr, keeping the tail.

Appends are O(chunk): chunks are kept in a deque and whole chunks are dropped from the
front once the rest still holds `limit` characters, so a process printing a million short
lines never causes quadratic copying.
"""

from __future__ import annotations

import codecs
from collections import deque

MAX_OUTPUT_CHARS = 200_000
TAIL_CHARS = 4_000


class OutputBuffer:
    """The last `limit` characters of a byte stream decoded as UTF-8 (bad bytes replaced)."""

    def __init__(self, limit: int = MAX_OUTPUT_CHARS) -> None:
        self.limit = limit
        self.total_chars = 0
        self._chunks: deque[str] = deque()
        self._held = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data: bytes) -> None:
        self._append(self._decoder.decode(data))

    def close(self) -> None:
        """Flush a multi-byte sequence cut off by the end of the stream."""
        self._append(self._decoder.decode(b"", final=True))

    @property
    def truncated(self) -> bool:
        return self.total_chars > self.limit

    def text(self) -> str:
        joined = "".join(self._chunks)
        return joined[-self.limit :] if len(joined) > self.limit else joined

    def tail(self, chars: int = TAIL_CHARS) -> str:
        pieces: list[str] = []
        held = 0
        for chunk in reversed(self._chunks):
            pieces.append(chunk)
            held += len(chunk)
            if held >= chars:
                break
        joined = "".join(reversed(pieces))
        return joined[-chars:]

    def _append(self, text: str) -> None:
        if not text:
            return
        self._chunks.append(text)
        self._held += len(text)
        self.total_chars += len(text)
        while self._held - len(self._chunks[0]) >= self.limit:
            self._held -= len(self._chunks.popleft())
