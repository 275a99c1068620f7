"""The file side of a transfer, shared by the gateway (workspace endpoints) and
the node: chunked reads that hash as they go, hashed writes, the temporary name a file
is received under until its bytes and sha256 check out, and the write-behind file it is
written through."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from gsv_core.fsmodes import make_private_dir
from gsv_core.protocol.frames import MAX_TRANSFER_CHUNK
from gsv_core.protocol.frames import TRANSFER_HEADER_SIZE
from gsv_core.protocol.frames import pack_transfer_header


def new_frame_buffer() -> bytearray:
    """Room for one binary frame: the transfer id and a full chunk."""
    return bytearray(TRANSFER_HEADER_SIZE + MAX_TRANSFER_CHUNK)


def read_frame_and_hash(
    handle: Any, hasher: Any, transfer_id: int, buffer: bytearray
) -> memoryview | None:
    """Read the next chunk of an open file into `buffer` right after the transfer id and
    hash it: the binary frame is a view of `buffer` (None at the end of the file), made
    without a copy. Blocking: run it in a thread. `buffer` is reused by the caller only
    once the frame has been sent."""
    view = memoryview(buffer)
    count = handle.readinto(view[TRANSFER_HEADER_SIZE:])
    if not count:
        return None
    pack_transfer_header(buffer, transfer_id)
    hasher.update(view[TRANSFER_HEADER_SIZE : TRANSFER_HEADER_SIZE + count])
    return view[: TRANSFER_HEADER_SIZE + count]


def hash_and_write(hasher: Any, handle: Any, chunk: memoryview | bytes) -> None:
    """Add a received chunk to `hasher` and write it."""
    hasher.update(chunk)
    handle.write(chunk)


def temp_path(final: Path, transfer_id: int) -> Path:
    """Where `final` is received: a hidden `.part` file next to it, renamed when whole."""
    return final.with_name(f".{final.name}.gsv-{transfer_id:08x}.part")


class PartJournal:
    """The `.part` files being received, listed in a small file, so a process killed in
    the middle of a transfer (no `finally` ran) removes them when it starts again: no
    half file is left behind forever. Blocking I/O: call it in a thread."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def add(self, part: Path) -> None:
        self._save(self._load() | {str(part)})

    def remove(self, part: Path) -> None:
        self._save(self._load() - {str(part)})

    def sweep(self) -> int:
        """Delete every listed `.part` (left by an earlier run); how many were found."""
        removed = 0
        for name in self._load():
            part = Path(name)
            if part.name.endswith(".part"):  # never anything else, whatever the file says
                try:
                    part.unlink()
                    removed += 1
                except FileNotFoundError:
                    pass
        self._save(set())
        return removed

    def _load(self) -> set[str]:
        try:
            listed = json.loads(self.path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return set()
        return {p for p in listed if isinstance(p, str)} if isinstance(listed, list) else set()

    def _save(self, parts: set[str]) -> None:
        make_private_dir(self.path.parent)  # under GSV_HOME: owner-only, as all of it
        temp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(sorted(parts), handle)
        os.replace(temp, self.path)


# how far a received file runs ahead of its write-back (see WriteBehindFile)
WRITE_BEHIND = 8 * 1024 * 1024
_FADVISE = getattr(os, "posix_fadvise", None)  # Linux; macOS has none


class WriteBehindFile:
    """A received file, written straight to the kernel. Every WRITE_BEHIND bytes the
    kernel is told to start writing back the stretch just written and to drop the
    stretches before it from the page cache (they are on disk by then; pages still
    dirty are left alone, so nothing is lost), the way `dd oflag=nocache` does.

    A transfer of any size so holds a few stretches of page cache, not the whole file:
    it does not push the machine's working set out of memory, it recycles the same
    pages (on a VM, writing into never-touched memory cost more than the disk:
    bench/transfer.py), and the final fsync finds little left to write."""

    def __init__(self, path: Path, mode: int = 0o666) -> None:
        # `mode` (before the umask) for a new file: 0600 for the gateway's own files
        self._file = open(  # noqa: SIM115 - closed by close()
            path, "wb", buffering=0, opener=lambda name, flags: os.open(name, flags, mode)
        )
        self._written = 0
        self._mark = 0  # where the stretch not yet handed to write-back starts

    @property
    def closed(self) -> bool:
        return self._file.closed

    def fileno(self) -> int:
        return self._file.fileno()

    def write(self, data: bytes | memoryview) -> int:
        view = memoryview(data)
        while view:  # an unbuffered write may take part of it
            view = view[self._file.write(view) or 0 :]
        self._written += len(data)
        if self._written - self._mark >= WRITE_BEHIND:
            self._write_behind()
        return len(data)

    def _write_behind(self) -> None:
        if _FADVISE is not None:
            fd, dontneed = self._file.fileno(), os.POSIX_FADV_DONTNEED
            # starts write-back of the new stretch (its pages are dirty: none is dropped)
            _FADVISE(fd, self._mark, self._written - self._mark, dontneed)
            # drops the stretches before it whose write-back has finished
            dropped_from = max(0, self._mark - 4 * WRITE_BEHIND)
            _FADVISE(fd, dropped_from, self._mark - dropped_from, dontneed)
        self._mark = self._written

    def flush(self) -> None:
        """Nothing is buffered here; kept so callers can treat it as a file."""

    def close(self) -> None:
        self._file.close()
