"""The node's half of file transfers: sending a file (meta, then chunks when
the gateway says start, then complete with its sha256) and receiving one (accept, write
chunks to a temporary name, and on end rename it only if the byte count and sha256 match;
otherwise delete it, so a failed transfer leaves nothing behind).

Decisions are enforced where the file is: before anything is opened, the node's guard
judges a send as a Read of the path and a receive as a Write of it (gsv's secret files are
refused either way; a write the standard policy would ask about, outside the workspace,
needs the gateway's approval binding for exactly this event, docs/protocol.md#transfers)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import mimetypes
import os
from collections.abc import Awaitable
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from gsv_core.errors import GsvError
from gsv_core.protocol import methods as m
from gsv_core.protocol.frames import FrameError
from gsv_core.protocol.frames import parse_binary_frame
from gsv_core.transfer import PartJournal
from gsv_core.transfer import WriteBehindFile
from gsv_core.transfer import hash_and_write
from gsv_core.transfer import new_frame_buffer
from gsv_core.transfer import read_frame_and_hash
from gsv_core.transfer import temp_path

log = logging.getLogger(__name__)

Call = Callable[[str, dict[str, Any]], Awaitable[Any]]
SendBinary = Callable[[bytes | memoryview], Awaitable[None]]
Resolve = Callable[[str], str]  # a path of a transfer -> the real path (workspace rules)
# the node's guard: (tool, args, approval binding); raises ToolFailed when refused
Check = Callable[[str, Any, Any], object]
# what the guard judges a send and a receive as (the names a node tool would have)
READ, WRITE = "Read", "Write"


@dataclass
class _Incoming:
    final: Path
    temp: Path
    handle: Any
    size: int
    written: int = 0
    hasher: Any = field(default_factory=hashlib.sha256)
    error: str | None = None  # writing failed: later chunks are dropped, `done` says why
    journal: PartJournal | None = None


class NodeTransfers:
    def __init__(
        self, resolve: Resolve, journal: PartJournal | None = None, check: Check | None = None
    ) -> None:
        self._resolve = resolve
        self._check = check
        self._journal = journal  # the .part files in progress, swept after a crash
        self._outgoing: dict[int, Path] = {}  # described, waiting for start
        self._sending: set[int] = set()  # streaming now
        self._incoming: dict[int, _Incoming] = {}

    @property
    def in_progress(self) -> int:
        """Transfers this node takes part in right now (sending or receiving)."""
        return len(self._outgoing) + len(self._sending) + len(self._incoming)

    # -- sending ------------------------------------------------------------------------
    async def on_send(self, payload: dict[str, Any], call: Call) -> None:
        """transfer.send: describe the file (size, mime) or say why it cannot be sent."""
        transfer_id = int(payload["transferId"])
        try:
            self._guard(READ, payload)
            path = Path(self._resolve(str(payload["path"])))
            size = await asyncio.to_thread(_file_size, path)
        except (OSError, GsvError) as exc:
            await call(
                m.TRANSFER_META, {"transferId": transfer_id, "size": 0, "error": _reason(exc)}
            )
            return
        self._outgoing[transfer_id] = path
        meta: dict[str, Any] = {"transferId": transfer_id, "size": size}
        mime = mimetypes.guess_type(path.name)[0]
        if mime:
            meta["mime"] = mime
        await call(m.TRANSFER_META, meta)

    async def on_start(self, payload: dict[str, Any], call: Call, send_binary: SendBinary) -> None:
        """transfer.start: stream the file, then report completion with its sha256."""
        transfer_id = int(payload["transferId"])
        path = self._outgoing.pop(transfer_id, None)
        if path is None:
            return
        hasher = hashlib.sha256()
        self._sending.add(transfer_id)
        try:
            with path.open("rb") as handle:
                await _stream(handle, hasher, transfer_id, send_binary, self._sending)
        except OSError as exc:
            await call(m.TRANSFER_COMPLETE, {"transferId": transfer_id, "error": _reason(exc)})
            return
        finally:
            self._sending.discard(transfer_id)
        await call(m.TRANSFER_COMPLETE, {"transferId": transfer_id, "sha256": hasher.hexdigest()})

    # -- receiving ----------------------------------------------------------------------
    async def on_receive(self, payload: dict[str, Any], call: Call) -> None:
        """transfer.receive: open a temporary file next to the target and accept."""
        transfer_id = int(payload["transferId"])
        try:
            self._guard(WRITE, payload)
            final = Path(self._resolve(str(payload["path"])))
            temp = temp_path(final, transfer_id)
            handle = await asyncio.to_thread(_open_temp, final, temp, self._journal)
        except (OSError, GsvError) as exc:
            await call(m.TRANSFER_ACCEPT, {"transferId": transfer_id, "error": _reason(exc)})
            return
        self._incoming[transfer_id] = _Incoming(
            final, temp, handle, int(payload.get("size") or 0), journal=self._journal
        )
        await call(m.TRANSFER_ACCEPT, {"transferId": transfer_id})

    def _guard(self, tool: str, payload: dict[str, Any]) -> None:
        """Raise unless this node may do `tool` on the event's path: the event's own
        fields are the arguments, so a binding covers exactly this event."""
        if self._check is not None:
            args = {key: value for key, value in payload.items() if key != "approval"}
            self._check(tool, args, payload.get("approval"))

    def on_binary(self, data: bytes) -> Awaitable[None] | None:
        """A chunk for a file being received, hashed and written inline: a 256 KiB write
        to the page cache costs less than a thread hop, and a slow disk slowing this
        node's socket is the backpressure we want (measured in bench/transfer.py). Plain
        function: only a failed write returns something for the socket to wait on."""
        try:
            transfer_id, chunk = parse_binary_frame(data)
        except FrameError:
            return None
        incoming = self._incoming.get(transfer_id)
        if incoming is None:
            log.warning("dropped a chunk for unknown transfer %08x", transfer_id)
            return None
        if incoming.error is not None:
            return None  # already failed; the gateway hears why at transfer.end
        incoming.written += len(chunk)
        try:
            hash_and_write(incoming.hasher, incoming.handle, chunk)
        except (OSError, ValueError) as exc:  # disk full, or closed by a failure meanwhile
            log.warning("transfer %08x: cannot write: %s", transfer_id, exc)
            incoming.error = f"cannot write {incoming.final}: {_reason(exc)}"
            return asyncio.to_thread(_close_and_keep, incoming, False)
        return None

    async def on_end(self, payload: dict[str, Any], call: Call) -> None:
        """transfer.end: keep the file if it is whole, else delete it; report either way.
        Sent to a source, it means the transfer failed elsewhere: stop sending."""
        transfer_id = int(payload["transferId"])
        if payload.get("error") is not None:
            self._outgoing.pop(transfer_id, None)
            self._sending.discard(transfer_id)
        incoming = self._incoming.pop(transfer_id, None)
        if incoming is None:
            return
        sha = incoming.hasher.hexdigest()
        error = incoming.error or payload.get("error")
        if error is None and incoming.written != incoming.size:
            error = f"received {incoming.written} of {incoming.size} bytes"
        if error is None and payload.get("sha256") not in (None, sha):
            error = "the checksum does not match the source's"
        await asyncio.to_thread(_close_and_keep, incoming, error is None)
        if error is not None:
            log.warning("transfer %08x failed: %s", transfer_id, error)
        done: dict[str, Any] = {
            "transferId": transfer_id,
            "bytesWritten": incoming.written,
            "sha256": sha,
        }
        if error is not None:
            done["error"] = str(error)
        with contextlib.suppress(GsvError):
            await call(m.TRANSFER_DONE, done)

    async def close(self) -> None:
        """Shutting down or disconnected: partial files are deleted."""
        for incoming in list(self._incoming.values()):
            await asyncio.to_thread(_close_and_keep, incoming, False)
        self._incoming.clear()
        self._outgoing.clear()
        self._sending.clear()


async def _stream(
    handle: Any, hasher: Any, transfer_id: int, send_binary: SendBinary, sending: set[int]
) -> None:
    """Send the file in chunks, reading (and hashing) the next one in a thread while the
    current one goes out: disk, hash and socket overlap instead of taking turns. Two
    buffers take turns, each read in place behind its transfer id: `send_binary` has
    copied (masked) a frame when it returns, so its buffer is free for the read after
    next. Stops early when the transfer leaves `sending` (it failed elsewhere)."""
    buffers = (new_frame_buffer(), new_frame_buffer())

    def read_ahead(turn: int) -> asyncio.Future[memoryview | None]:
        buffer = buffers[turn % 2]
        return asyncio.ensure_future(
            asyncio.to_thread(read_frame_and_hash, handle, hasher, transfer_id, buffer)
        )

    turn = 0
    ahead = read_ahead(turn)
    try:
        while (frame := await ahead) is not None and transfer_id in sending:
            turn += 1
            ahead = read_ahead(turn)
            await send_binary(frame)
    finally:
        if not ahead.done():  # the send failed: let the read finish before the file closes
            await asyncio.wait([ahead])


def _file_size(path: Path) -> int:
    if not path.is_file():
        raise OSError(f"{path} is not a regular file")
    return path.stat().st_size


def _open_temp(final: Path, temp: Path, journal: PartJournal | None) -> Any:
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.is_dir():
        raise OSError(f"{final} is a directory")
    if journal is not None:
        journal.add(temp)  # before the file exists: a crash right after still finds it
    return WriteBehindFile(temp)


def _close_and_keep(incoming: _Incoming, keep: bool) -> None:
    if not incoming.handle.closed:
        incoming.handle.flush()
        if keep:
            os.fsync(incoming.handle.fileno())
        incoming.handle.close()
    if keep:
        os.replace(incoming.temp, incoming.final)
    else:
        with contextlib.suppress(FileNotFoundError):
            incoming.temp.unlink()
    if incoming.journal is not None:
        incoming.journal.remove(incoming.temp)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, GsvError):
        return exc.message
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    return str(exc)
