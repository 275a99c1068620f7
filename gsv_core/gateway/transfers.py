"""File transfers between nodes and the workspace.

Endpoints are `{nodeId}:/path` on a node or `gsv:workspace/path` in the calling agent's
workspace (under the workspace path rules, never raw storage keys). Bytes travel as
binary frames (4-byte little-endian transfer id + chunk); control goes through the
`transfer.*` requests and events:

    source node   <- transfer.send {transferId, path}      -> transfer.meta {size, mime}
    dest node     <- transfer.receive {transferId, path, size, mime} -> transfer.accept
    source node   <- transfer.start                          ... binary frames ...
    source node   -> transfer.complete {sha256}
    dest node     <- transfer.end {sha256}                   -> transfer.done {bytesWritten, sha256}

A node judges what it is asked to read or write with its own guard, as a Read or a Write
of that path (gsv_core/node/transfers.py); a `transfer.receive` its standard policy would
ask about (outside its workspace) carries an approval binding signed for exactly that
event, as `tool.invoke` does. Every transfer this service runs has been decided already:
an agent's `gsv__Transfer` by the approval policy (gateway/tool_router.py), a client's
`transfer.request` by the human who asked for it.

Transfer ids are random and bound to the two connections taking part: a binary frame
from any other socket is dropped and logged. Every transfer has an idle timeout and is
cleaned up when either side fails or disconnects; the destination writes to a temporary
name and renames only after the byte count and the sha256 of both ends agree. The gateway
never holds more than a bounded window of a file: relaying waits for the destination.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import mimetypes
import os
import secrets
from collections.abc import Awaitable
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from gsv_core.approval.binding import sign
from gsv_core.approval.policy import node_may_ask
from gsv_core.errors import GsvError
from gsv_core.errors import InvalidParams
from gsv_core.errors import NotFound
from gsv_core.errors import TimedOut
from gsv_core.errors import ToolFailed
from gsv_core.errors import Unavailable
from gsv_core.fsmodes import FILE_MODE
from gsv_core.fsmodes import make_private_dir
from gsv_core.protocol import events
from gsv_core.protocol.frames import TRANSFER_HEADER_SIZE
from gsv_core.protocol.frames import parse_binary_frame
from gsv_core.rpc.context import Peer
from gsv_core.transfer import PartJournal
from gsv_core.transfer import WriteBehindFile
from gsv_core.transfer import hash_and_write
from gsv_core.transfer import new_frame_buffer
from gsv_core.transfer import read_frame_and_hash
from gsv_core.transfer import temp_path

log = logging.getLogger(__name__)

WORKSPACE = "gsv"
IDLE_TIMEOUT = 60.0
Progress = Callable[[int, int], None]  # (bytes so far, total size)
WorkspacePath = Callable[[str, str], Awaitable[Path]]  # (agent id, path) -> real file
KeyOf = Callable[[str], str | None]  # a node id -> the key its approval bindings are signed with
# what a node's guard judges each end as (docs/protocol.md#transfers)
READ, WRITE = "Read", "Write"


@dataclass(frozen=True)
class Endpoint:
    node: str  # a node id, or "gsv" for the workspace
    path: str

    @property
    def in_workspace(self) -> bool:
        return self.node == WORKSPACE

    def __str__(self) -> str:
        return f"gsv:workspace/{self.path}" if self.in_workspace else f"{self.node}:{self.path}"


def parse_endpoint(raw: str) -> Endpoint:
    node, sep, path = raw.strip().partition(":")
    if not sep or not node or not path:
        raise InvalidParams(f"invalid endpoint {raw!r}: use nodeId:/path or gsv:workspace/path")
    if node == WORKSPACE:
        if not path.startswith("workspace/"):
            raise InvalidParams(
                f"invalid endpoint {raw!r}: workspace paths are gsv:workspace/<path>"
            )
        path = path.removeprefix("workspace/")
    return Endpoint(node, path)


@dataclass
class Transfer:
    id: int
    source: Endpoint
    destination: Endpoint
    source_peer: Peer | None = None
    dest_peer: Peer | None = None
    size: int = 0
    mime: str | None = None
    received: int = 0
    hasher: Any = field(default_factory=hashlib.sha256)
    waiting: dict[str, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)
    activity: asyncio.Event = field(default_factory=asyncio.Event)
    temp: Path | None = None
    handle: Any = None
    failed: str | None = None
    progress: Progress | None = None
    gone: set[str] = field(default_factory=set)  # "source" / "destination" peers that left

    def expect(self, step: str) -> asyncio.Future[dict[str, Any]]:
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        if self.failed is not None:  # already over: the step fails at once, not at timeout
            future.set_exception(ToolFailed(self.failed))
            return future
        self.waiting[step] = future
        return future

    def answer(self, step: str, params: dict[str, Any]) -> bool:
        future = self.waiting.pop(step, None)
        if future is None or future.done():
            return False
        future.set_result(params)
        self.activity.set()
        return True

    def fail(self, reason: str) -> None:
        self.failed = self.failed or reason
        for future in self.waiting.values():
            if not future.done():
                future.set_exception(ToolFailed(reason))
        self.waiting.clear()
        self.activity.set()


class TransferService:
    def __init__(
        self,
        peer_of: Callable[[str], Peer | None],
        workspace_path: WorkspacePath,
        journal: PartJournal | None = None,
        approval_key_of: KeyOf | None = None,
    ) -> None:
        self._peer_of = peer_of
        self._workspace_path = workspace_path
        self._journal = journal  # workspace .part files in progress, swept after a crash
        self._active: dict[int, Transfer] = {}
        self.idle_timeout = IDLE_TIMEOUT
        # signs the bindings nodes ask for; None: nothing is signed, so a node refuses
        # what its standard policy would ask about
        self.approval_key_of = approval_key_of

    # -- running one ----------------------------------------------------------------
    async def run(
        self, source: str, destination: str, agent_id: str, progress: Progress | None = None
    ) -> dict[str, Any]:
        """Move a file end to end; the result of gsv__Transfer."""
        src, dst = parse_endpoint(source), parse_endpoint(destination)
        if src.in_workspace and dst.in_workspace:
            raise InvalidParams("Cannot transfer from gsv to gsv: both endpoints are the workspace")
        transfer = Transfer(self._new_id(), src, dst, progress=progress)
        transfer.source_peer = None if src.in_workspace else self._node(src.node, "Source")
        transfer.dest_peer = None if dst.in_workspace else self._node(dst.node, "Destination")
        self._active[transfer.id] = transfer
        try:
            return await self._run(transfer, agent_id)
        except BaseException as exc:
            # whatever ended it (a step's error, a checksum, a cancelled caller), both
            # nodes must hear of it: the destination drops its partial file
            transfer.fail(exc.message if isinstance(exc, GsvError) else "transfer cancelled")
            raise
        finally:
            self._active.pop(transfer.id, None)
            await self._clean_up(transfer)

    @property
    def active(self) -> int:
        """How many transfers are in progress."""
        return len(self._active)

    def _node(self, node_id: str, role: str) -> Peer:
        peer = self._peer_of(node_id)
        if peer is None:
            raise Unavailable(f"{role} node not connected: {node_id}")
        return peer

    def _new_id(self) -> int:
        while True:
            transfer_id = secrets.randbits(32)  # unpredictable: no guessing another's transfer
            if transfer_id and transfer_id not in self._active:
                return transfer_id

    async def _run(self, t: Transfer, agent_id: str) -> dict[str, Any]:
        await self._open_source(t, agent_id)
        await self._open_destination(t, agent_id)
        source_sha = await self._stream(t, agent_id)
        written = await self._close_destination(t, agent_id, source_sha)
        result: dict[str, Any] = {
            "source": str(t.source),
            "destination": str(t.destination),
            "bytesTransferred": written,
            "sha256": source_sha,
        }
        if t.mime:
            result["mime"] = t.mime
        return result

    async def _open_source(self, t: Transfer, agent_id: str) -> None:
        if t.source.in_workspace:
            path = await self._workspace_path(agent_id, t.source.path)
            size = await asyncio.to_thread(_file_size, path)  # file calls off the loop
            if size is None:
                raise NotFound(f"Not found in the workspace: {t.source.path}")
            t.size = size
            t.mime = mimetypes.guess_type(path.name)[0]
            return
        meta = t.expect("meta")
        payload = self._approved(t.source.node, READ, {"transferId": t.id, "path": t.source.path})
        self._tell(t.source_peer, events.TRANSFER_SEND, payload)
        params = await self._wait(t, meta)
        if params.get("error"):
            raise ToolFailed(f"source {t.source}: {params['error']}")
        t.size, t.mime = int(params.get("size") or 0), params.get("mime")

    async def _open_destination(self, t: Transfer, agent_id: str) -> None:
        if t.destination.in_workspace:
            final = await self._workspace_path(agent_id, t.destination.path)
            t.temp = temp_path(final, t.id)
            t.handle = await asyncio.to_thread(_open_temp, t.temp, self._journal)
            return
        accept = t.expect("accept")
        payload: dict[str, Any] = {"transferId": t.id, "path": t.destination.path, "size": t.size}
        if t.mime:
            payload["mime"] = t.mime
        self._tell(
            t.dest_peer, events.TRANSFER_RECEIVE, self._approved(t.destination.node, WRITE, payload)
        )
        params = await self._wait(t, accept)
        if params.get("error"):
            raise ToolFailed(f"destination {t.destination}: {params['error']}")

    async def _stream(self, t: Transfer, agent_id: str) -> str:
        """Move the bytes; returns the source's sha256."""
        if t.source.in_workspace:
            path = await self._workspace_path(agent_id, t.source.path)
            return await self._send_file(t, path)
        complete = t.expect("complete")
        self._tell(t.source_peer, events.TRANSFER_START, {"transferId": t.id})
        params = await self._wait(t, complete)
        if params.get("error"):
            raise ToolFailed(f"source {t.source}: {params['error']}")
        claimed = str(params.get("sha256") or "")
        if t.received != t.size or not claimed:
            raise ToolFailed(f"the source sent {t.received} of {t.size} bytes")
        if t.handle is not None and claimed != t.hasher.hexdigest():
            raise ToolFailed("the workspace copy's checksum differs from the source's")
        return claimed

    async def _send_file(self, t: Transfer, path: Path) -> str:
        hasher = hashlib.sha256()
        handle = await asyncio.to_thread(path.open, "rb")
        try:
            # a new buffer per frame: a queued frame is only a reference until it is written
            while t.failed is None and (
                frame := await asyncio.to_thread(
                    read_frame_and_hash, handle, hasher, t.id, new_frame_buffer()
                )
            ):
                await self._deliver(t, frame[TRANSFER_HEADER_SIZE:], frame)
        finally:
            await asyncio.to_thread(handle.close)
        if t.failed is not None:
            raise ToolFailed(t.failed)
        return str(hasher.hexdigest())

    async def _close_destination(self, t: Transfer, agent_id: str, source_sha: str) -> int:
        if t.destination.in_workspace:
            await asyncio.to_thread(_flush_and_close, t.handle)
            t.handle = None
            if t.received != t.size:
                raise ToolFailed(f"the workspace received {t.received} of {t.size} bytes")
            final = await self._workspace_path(agent_id, t.destination.path)
            assert t.temp is not None
            await asyncio.to_thread(os.replace, t.temp, final)
            self._forget_part(t.temp)
            t.temp = None
            return t.received
        done = t.expect("done")
        self._tell(t.dest_peer, events.TRANSFER_END, {"transferId": t.id, "sha256": source_sha})
        params = await self._wait(t, done)
        if params.get("error"):
            raise ToolFailed(f"destination {t.destination}: {params['error']}")
        written = int(params.get("bytesWritten") or 0)
        if written != t.size or params.get("sha256") not in (None, source_sha):
            raise ToolFailed(f"the destination wrote {written} of {t.size} bytes")
        return written

    async def _wait(self, t: Transfer, future: asyncio.Future[dict[str, Any]]) -> dict[str, Any]:
        """Wait for one step; any activity (a chunk, a reply) resets the idle timer."""
        while not future.done():
            t.activity.clear()
            try:
                async with asyncio.timeout(self.idle_timeout):
                    await t.activity.wait()
            except TimeoutError:
                t.fail(f"transfer stalled: nothing happened for {self.idle_timeout:g}s")
                raise TimedOut(f"transfer {t.source} -> {t.destination} stalled") from None
        return future.result()

    def _approved(self, node_id: str, tool: str, payload: dict[str, Any]) -> dict[str, Any]:
        """The event's payload, with an approval binding for exactly it when the node's
        standard policy could ask about a `tool` call (only a Write can: outside the
        workspace), as `tool.invoke` carries one (gateway/nodes.py)."""
        key = self.approval_key_of(node_id) if self.approval_key_of is not None else None
        if key is None or not node_may_ask(tool, payload):
            return payload
        return {**payload, "approval": sign(key, tool, payload, "allow")}

    def _forget_part(self, temp: Path) -> None:
        if self._journal is not None:
            self._journal.remove(temp)  # small and local: not worth a thread hop

    def _tell(self, peer: Peer | None, event: str, payload: dict[str, Any]) -> None:
        if peer is not None:
            peer.send_event(event, payload)

    async def _clean_up(self, t: Transfer) -> None:
        """Drop the workspace temp file; after a failure, tell the nodes still connected
        (the destination deletes its partial file, the source stops sending)."""
        if t.handle is not None:
            await asyncio.to_thread(t.handle.close)
        if t.temp is not None:
            with contextlib.suppress(FileNotFoundError):
                t.temp.unlink()
            self._forget_part(t.temp)
        if t.failed is None:
            return
        ended = {"transferId": t.id, "error": t.failed}
        if t.dest_peer is not None and "destination" not in t.gone:
            t.dest_peer.send_event(events.TRANSFER_END, ended)
        if (
            t.source_peer is not None
            and "source" not in t.gone
            and t.source_peer is not t.dest_peer
        ):
            t.source_peer.send_event(events.TRANSFER_END, ended)

    # -- traffic from the nodes ------------------------------------------------------
    async def on_binary(self, peer: Peer, frame: bytes) -> None:
        """A frame from a source node: relayed as it is (with backpressure) or written."""
        transfer_id, chunk = parse_binary_frame(frame)
        t = self._active.get(transfer_id)
        if t is None or t.source_peer is not peer or "complete" not in t.waiting:
            log.warning("dropped a %d-byte frame for transfer %08x from %s (not its source)",
                        len(chunk), transfer_id, peer.connection_id)  # fmt: skip
            return
        await self._deliver(t, chunk, frame)

    async def _deliver(
        self, t: Transfer, chunk: memoryview | bytes, frame: bytes | memoryview
    ) -> None:
        if t.received + len(chunk) > t.size:
            t.fail(f"the source sent more than the announced {t.size} bytes")
            return
        t.received += len(chunk)
        t.activity.set()
        if t.handle is not None:  # the gateway is the destination: it checks the bytes
            try:
                await asyncio.to_thread(hash_and_write, t.hasher, t.handle, chunk)
            except (OSError, ValueError) as exc:  # disk full, or closed by a failure
                t.fail(f"cannot write to the workspace: {exc}")
                return
        elif t.dest_peer is not None:  # a relay: the two nodes check the bytes
            try:
                await t.dest_peer.send_binary(frame)
            except GsvError:  # the destination went away: fail this transfer, not the link
                t.fail(f"Node disconnected: {t.destination.node}")  # the source's reader is on
                return
        if t.progress is not None:
            t.progress(t.received, t.size)

    def answer(self, peer: Peer, step: str, params: dict[str, Any]) -> bool:
        """A node's transfer.* request; False when it matches no step in progress."""
        t = self._active.get(int(params["transferId"]))
        if t is None:
            return False
        expected = t.source_peer if step in ("meta", "complete") else t.dest_peer
        if expected is not peer:
            log.warning("transfer %08x: %s from a connection not taking part", t.id, step)
            return False
        return t.answer(step, params)

    def peer_gone(self, peer: Peer) -> None:
        """A node disconnected: every transfer it takes part in fails at once."""
        for t in list(self._active.values()):
            if peer is t.source_peer:
                t.gone.add("source")
                t.fail(f"Node disconnected: {t.source.node}")
            if peer is t.dest_peer:
                t.gone.add("destination")
                t.fail(f"Node disconnected: {t.destination.node}")


def _flush_and_close(handle: Any) -> None:
    handle.flush()
    os.fsync(handle.fileno())
    handle.close()


def _file_size(path: Path) -> int | None:
    """The size of a regular file, or None when there is none."""
    return path.stat().st_size if path.is_file() else None


def _open_temp(temp: Path, journal: PartJournal | None) -> Any:
    make_private_dir(temp.parent)  # the workspace, under the gateway's data directory
    if journal is not None:
        journal.add(temp)  # before the file exists: a crash right after still finds it
    return WriteBehindFile(temp, FILE_MODE)
