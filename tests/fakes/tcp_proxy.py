"""A TCP proxy on 127.0.0.1 that can freeze its open connections: bytes stop flowing but
no socket closes, which is what a dead network looks like to both ends."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class FreezableProxy:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.connections = 0
        self._frozen: list[asyncio.Event] = []  # one "running" flag per live connection
        self._tasks: set[asyncio.Task[None]] = set()

    def freeze(self) -> None:
        """Stop forwarding on every connection open now (new ones flow normally)."""
        for running in self._frozen:
            running.clear()
        self._frozen = []

    async def _pipe(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, running: asyncio.Event
    ) -> None:
        try:
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                while data := await reader.read(65536):
                    await running.wait()  # frozen: hold the bytes forever
                    writer.write(data)
                    await writer.drain()
        finally:
            writer.close()  # also when cancelled: a kept-alive connection is still open

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        running = asyncio.Event()
        running.set()
        self._frozen.append(running)
        for pipe in (
            self._pipe(reader, up_writer, running),
            self._pipe(up_reader, writer, running),
        ):
            task = asyncio.create_task(pipe)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)


@asynccontextmanager
async def freezable_proxy(target_port: int) -> AsyncIterator[FreezableProxy]:
    proxy = FreezableProxy(target_port)
    server = await asyncio.start_server(proxy._handle, "127.0.0.1", 0)
    proxy.port = server.sockets[0].getsockname()[1]
    try:
        yield proxy
    finally:
        server.close()
        for task in list(proxy._tasks):
            task.cancel()
        await asyncio.gather(*proxy._tasks, return_exceptions=True)
