"""KeyLocks: one asyncio.Lock per key, kept only while someone holds it or waits for it:
work on one key is serialised, work on different keys runs side by side.

Keys are storage keys and resolved file paths (an agent may issue several tool calls at
once; two edits of one file would otherwise both read the old text and the second write
would undo the first) and session keys (the session manager makes a session's actor once,
while a crowd of new sessions is made side by side).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class KeyLocks:
    """One asyncio.Lock per key, dropped when nobody holds or waits for it."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}  # key -> (lock, users)

    def __len__(self) -> int:
        """Keys locked or waited for now."""
        return len(self._locks)

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)
