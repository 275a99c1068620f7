"""The node's receiving half when the disk fails mid-transfer: later chunks are dropped
quietly, `transfer.done` carries the real reason (not a stall at the gateway), and no
partial file is left."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

from gsv_core.node.transfers import NodeTransfers
from gsv_core.protocol.frames import encode_binary_frame


class FullDisk:
    """A file handle whose disk is full (what `write` raises on ENOSPC)."""

    closed = False

    def write(self, data: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    def flush(self) -> None: ...

    def close(self) -> None:
        self.closed = True


async def test_a_write_failure_is_reported_at_the_end_and_leaves_nothing(tmp_path: Path) -> None:
    """ENOSPC on a chunk: the next chunks are ignored, done says why, no .part remains."""
    calls: list[tuple[str, dict[str, Any]]] = []

    async def call(method: str, params: dict[str, Any]) -> None:
        calls.append((method, params))

    receiving = NodeTransfers(lambda path: str(tmp_path / path))
    await receiving.on_receive({"transferId": 7, "path": "out.bin", "size": 3}, call)
    assert calls[-1] == ("transfer.accept", {"transferId": 7})
    part = next(tmp_path.glob("*.part"))
    receiving._incoming[7].handle.close()
    receiving._incoming[7].handle = FullDisk()  # the disk fills up now
    for _ in range(3):
        closing = receiving.on_binary(encode_binary_frame(7, b"x"))
        if closing is not None:  # only the failed write hands back work to wait for
            await closing
    await receiving.on_end({"transferId": 7, "sha256": "ab" * 32}, call)
    method, done = calls[-1]
    assert method == "transfer.done"
    assert "No space left on device" in done["error"] and str(tmp_path / "out.bin") in done["error"]
    assert not part.exists() and not (tmp_path / "out.bin").exists()
    assert receiving.in_progress == 0
