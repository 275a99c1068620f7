"""Reading a websockets connection with its public API: every message, in order, to one
handler.

`dispatch_messages(ws, handler)` iterates the connection (`async for`) and hands each
message to `handler`. A handler that returns an awaitable is awaited before the next
message is read, so order holds (a `connect` is done before the next request is seen)
and a slow consumer slows the socket: websockets stops reading once `max_queue`
messages wait (its own flow control), instead of filling memory. Fragments, invalid
UTF-8 (1007), oversized messages (1009) and pings are websockets' business.

`close_reading(ws, reader)` closes a connection whose reader may be stuck in a handler:
while nothing reads, websockets stops reading the socket once its queue is full, and
would not see the peer's close frame until `close_timeout`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable
from collections.abc import Callable

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode

log = logging.getLogger(__name__)

MessageHandler = Callable[[str | bytes], Awaitable[None] | None]


async def dispatch_messages(
    ws: ServerConnection | ClientConnection, handler: MessageHandler
) -> None:
    """Hand every message to `handler` until the connection closes (either way)."""
    try:
        async for message in ws:
            try:
                pending = handler(message)
                # not held while we wait for the next one: an idle peer would keep its
                # last message (a node: its connect frame, with every tool) for ever
                del message
                if pending is not None:
                    await pending
            except Exception:
                # one bad message must not take the socket down with it
                log.exception("message handler failed")
    except ConnectionClosed:
        return  # closed with an error: `ws.close_code` says which


async def close_reading(
    ws: ServerConnection | ClientConnection,
    reader: asyncio.Task[None] | None,
    code: int = CloseCode.NORMAL_CLOSURE,
    reason: str = "",
) -> None:
    """Close: the reader is cancelled (its handler too) and what still arrives is
    discarded, so websockets reads on to the peer's close frame."""
    if reader is not None and reader is not asyncio.current_task():
        reader.cancel()
        await asyncio.wait({reader})  # one reader at a time: websockets refuses two
        discard: asyncio.Task[None] | None = asyncio.create_task(_discard(ws))
    else:
        discard = None
    try:
        await ws.close(code, reason)
    finally:
        if discard is not None:
            discard.cancel()


async def _discard(ws: ServerConnection | ClientConnection) -> None:
    with contextlib.suppress(ConnectionClosed):
        async for _ in ws:
            pass
