"""Shaping replies for messengers: splitting long text before the platform's limit,
one-line error notices, and a per-account send rate limit."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

ERROR_PREFIX = "⚠️ "
ERROR_MAX = 300


def split_text(text: str, limit: int) -> list[str]:
    """Pieces of at most `limit` characters, cut at a paragraph, line or word break when
    one is near the limit; never an empty piece."""
    text = text.strip()
    pieces: list[str] = []
    while len(text) > limit:
        cut = _break_point(text, limit)
        pieces.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    if text:
        pieces.append(text)
    return pieces


def _break_point(text: str, limit: int) -> int:
    window = text[:limit]
    for separator in ("\n\n", "\n", " "):
        at = window.rfind(separator)
        if at >= limit // 2:  # do not make tiny pieces just to cut at a separator
            return at + len(separator)
    return limit


def error_line(error: str) -> str:
    """A run's error as one short line a person can read on a phone."""
    line = " ".join(error.split())
    if len(line) > ERROR_MAX:
        line = line[: ERROR_MAX - 1] + "…"
    return f"{ERROR_PREFIX}{line}"


def reply_text(message: object) -> str:
    """The text of an assistant message as sent to a channel (text blocks joined, leading
    blank lines dropped)."""
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content.lstrip("\n")
    parts = [
        b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
    ]
    return "".join(parts).lstrip("\n").strip()


class RateLimiter:
    """A token bucket per key: bursts of up to a tenth of the per-minute rate go out at
    once (a reply split in pieces), after that sends wait for their turn."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, at)
        self._locks: dict[str, asyncio.Lock] = {}

    async def wait(self, key: str, per_minute: int) -> None:
        rate = max(1, per_minute) / 60.0
        capacity = max(1.0, per_minute / 10)
        async with self._locks.setdefault(key, asyncio.Lock()):
            now = self._clock()
            tokens, at = self._buckets.get(key, (capacity, now))
            tokens = min(capacity, tokens + (now - at) * rate)
            if tokens < 1:
                await asyncio.sleep((1 - tokens) / rate)
                now, tokens = self._clock(), 1.0
            self._buckets[key] = (tokens - 1, now)
