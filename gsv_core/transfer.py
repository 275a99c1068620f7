"""The file side of a transfer (spec 15), shared by the gateway (workspace endpoints) and
the node: chunked reads that hash as they go, hashed writes, and the temporary name a file
is received under until its bytes and sha256 check out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gsv_core.protocol.frames import MAX_TRANSFER_CHUNK


def read_and_hash(handle: Any, hasher: Any) -> bytes:
    """The next chunk of an open file, added to `hasher` (empty at the end). Blocking:
    run it in a thread; hashlib releases the GIL for large buffers."""
    chunk: bytes = handle.read(MAX_TRANSFER_CHUNK)
    hasher.update(chunk)
    return chunk


def hash_and_write(hasher: Any, handle: Any, chunk: memoryview | bytes) -> None:
    """Add a received chunk to `hasher` and write it."""
    hasher.update(chunk)
    handle.write(chunk)


def temp_path(final: Path, transfer_id: int) -> Path:
    """Where `final` is received: a hidden `.part` file next to it, renamed when whole."""
    return final.with_name(f".{final.name}.gsv-{transfer_id:08x}.part")
