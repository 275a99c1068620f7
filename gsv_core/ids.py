"""Random identifiers (session ids, run ids, connection ids, media names) without a
system call each.

`uuid.uuid4()` reads 16 bytes with `os.urandom`, which lets go of the GIL for its
`getrandom` call; getting the GIL back waits for whichever thread took it meanwhile (a
database thread decoding rows), up to the interpreter's switch interval of 5 ms. In a
crowd of 100 chats at once (bench/crowd.py), the one uuid4 each new session took held
the event loop 0.2 ms at the median and up to 3.6 ms, over 20 ms in all ahead of the
hundredth ack, for under 6 ms of CPU. The bytes here come from `os.urandom` too, the
same quality, drawn `POOL_BYTES` at a time.

Not for secrets that guard anything (tokens, keys): those take `secrets` as they are.
"""

from __future__ import annotations

import os
import threading
import uuid

POOL_BYTES = 4096  # 256 uuids a draw

_lock = threading.Lock()
_pool = b""
_at = 0


def random_bytes(count: int) -> bytes:
    """`count` bytes from the operating system's random source, drawn in blocks."""
    global _pool, _at
    with _lock:
        if _at + count > len(_pool):
            _pool, _at = os.urandom(max(POOL_BYTES, count)), 0
        start, _at = _at, _at + count
        return _pool[start:_at]


def new_uuid() -> uuid.UUID:
    """A random (version 4) UUID, as `uuid.uuid4()` makes."""
    return uuid.UUID(bytes=random_bytes(16), version=4)


def new_id() -> str:
    """`str(uuid.uuid4())`: the id shape clients of the original expect."""
    return str(new_uuid())


def new_hex(chars: int = 32) -> str:
    """`chars` (at most 32) hex digits of a random UUID, as `uuid.uuid4().hex[:chars]`."""
    return new_uuid().hex[:chars]


def _forget_pool() -> None:
    """A forked child must not hand out the ids its parent will also hand out."""
    global _pool, _at
    _pool, _at = b"", 0


os.register_at_fork(after_in_child=_forget_pool)
