"""Point lookups asked in the same pass of the event loop, read in one query.

A crowd of messages arriving at once (a hundred chats, a burst of channel traffic) each
look up their session before they are acknowledged. One read each meant a hundred thread
hops, queued on a few reader threads that contend with the busy loop for the GIL: under
such a burst a lookup that takes 50 microseconds alone waited 20-30 ms. Asked through a
`BatchedLookup`, every lookup of the same pass joins one read (`WHERE key IN (...)`) that
starts on the next pass; a lookup alone costs that one pass more.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from collections.abc import Callable
from typing import Generic
from typing import TypeVar

T = TypeVar("T")

# SQLite's default limit of host parameters is 32766 (since 3.32); far below it
MAX_KEYS = 500


class BatchedLookup(Generic[T]):
    def __init__(self, fetch: Callable[[list[str]], Awaitable[dict[str, T]]]) -> None:
        """`fetch(keys)` reads at most MAX_KEYS keys at once: the value of each found."""
        self._fetch = fetch
        self._waiting: dict[str, list[asyncio.Future[T | None]]] | None = None
        self._reads: set[asyncio.Task[None]] = set()

    async def get(self, key: str) -> T | None:
        """The value of `key`, None when there is none."""
        loop = asyncio.get_running_loop()
        if self._waiting is None:
            self._waiting = {}
            loop.call_soon(self._start_read)
        future: asyncio.Future[T | None] = loop.create_future()
        self._waiting.setdefault(key, []).append(future)
        return await future  # a caller cancelled drops only its own future

    def _start_read(self) -> None:
        waiting, self._waiting = self._waiting or {}, None
        keys = list(waiting)
        for start in range(0, len(keys), MAX_KEYS):
            part = {key: waiting[key] for key in keys[start : start + MAX_KEYS]}
            task = asyncio.get_running_loop().create_task(self._read(part))
            self._reads.add(task)
            task.add_done_callback(self._reads.discard)

    async def _read(self, waiting: dict[str, list[asyncio.Future[T | None]]]) -> None:
        try:
            found = await self._fetch(list(waiting))
        except BaseException as exc:
            for futures in waiting.values():
                for future in futures:
                    if future.done():
                        continue
                    if isinstance(exc, Exception):
                        future.set_exception(exc)  # every waiter hears why
                    else:
                        future.cancel()  # the read was cancelled (shutting down)
            if not isinstance(exc, Exception):
                raise
            return
        for key, futures in waiting.items():
            for future in futures:
                if not future.done():
                    future.set_result(found.get(key))
