"""A TCP proxy on 127.0.0.1 in front of the fake LLM server that holds a streamed reply in
the middle: every byte passes through until the first response that contains `marker`;
that response stops right after the marker until the test calls `release()`.

    async with held_stream(llm.port, b"SECOND") as proxy:
        # point the provider at f"http://127.0.0.1:{proxy.port}/v1"
        llm.enqueue(reply("first piece ", "SECOND piece"))
        ...
        await proxy.wait_held()   # the first event is through, the second is cut short
        ...                       # assert on the intermediate state: nothing else flows
        proxy.release()

The marker sits in a later event than the text the test wants to see, so the client has
whole events up to it and half of the marker's event: what it shows cannot change while
held. This makes "the reply arrives in pieces" observable without timing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from collections.abc import Coroutine
from contextlib import asynccontextmanager

from tests.waiting import WAIT

HOLD_LIMIT = 30.0  # a hold is released at close, or after this at the latest
_CHUNK = 65536


class HeldStream:
    def __init__(self, target_port: int, marker: bytes) -> None:
        if not marker:
            raise ValueError("marker must not be empty")
        self.target_port = target_port
        self.marker = marker
        self.port = 0
        self._armed = True  # only the first response carrying the marker is held
        self._held = asyncio.Event()
        self._released = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()

    async def wait_held(self, timeout: float = WAIT) -> None:
        """Return once a response is being held (fail after `timeout` seconds)."""
        async with asyncio.timeout(timeout):
            await self._held.wait()

    def release(self) -> None:
        self._released.set()

    def _cut(self, seen: bytes, data: bytes) -> int | None:
        """Where in `data` to stop: just after the marker, if it ends in `data`
        (`seen` is the tail of what passed before, for a marker split between reads)."""
        if not self._armed:
            return None
        window = seen + data
        found = window.find(self.marker)
        if found < 0:
            return None
        self._armed = False
        return found + len(self.marker) - len(seen)

    async def _down(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Upstream to client, holding at the marker."""
        seen = b""
        while data := await reader.read(_CHUNK):
            cut = self._cut(seen, data)
            if cut is not None:
                await _send(writer, data[:cut])
                self._held.set()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._released.wait(), HOLD_LIMIT)
                data = data[cut:]
            await _send(writer, data)
            seen = (seen + data)[-(len(self.marker) - 1) :] if len(self.marker) > 1 else b""

    async def _up(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(_CHUNK):
            await _send(writer, data)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        pipes = ((self._up(reader, up_writer), up_writer), (self._down(up_reader, writer), writer))
        for pipe, out in pipes:
            task = asyncio.create_task(_quietly(pipe, out))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        self._released.set()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


async def _send(writer: asyncio.StreamWriter, data: bytes) -> None:
    if data:
        writer.write(data)
        await writer.drain()


async def _quietly(pipe: Coroutine[None, None, None], writer: asyncio.StreamWriter) -> None:
    """A pipe ends when either side goes away; that is not an error here. Its writer is
    closed however it ends: the gateway keeps its model connections open between turns,
    so a pipe is often still open when the proxy closes and cancels it."""
    try:
        with contextlib.suppress(ConnectionError):
            await pipe
    finally:
        writer.close()


@asynccontextmanager
async def held_stream(target_port: int, marker: bytes) -> AsyncIterator[HeldStream]:
    proxy = HeldStream(target_port, marker)
    server = await asyncio.start_server(proxy._handle, "127.0.0.1", 0)
    proxy.port = server.sockets[0].getsockname()[1]
    try:
        yield proxy
    finally:
        server.close()
        await proxy.close()
        await server.wait_closed()
