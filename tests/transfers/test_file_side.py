"""gsv_core/transfer.py: frames read in place behind their transfer id, and the
write-behind file a received transfer is written through."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from gsv_core import transfer
from gsv_core.protocol.frames import MAX_TRANSFER_CHUNK
from gsv_core.protocol.frames import parse_binary_frame
from gsv_core.transfer import WriteBehindFile
from gsv_core.transfer import new_frame_buffer
from gsv_core.transfer import read_frame_and_hash


@pytest.mark.parametrize("size", [0, 1, MAX_TRANSFER_CHUNK, MAX_TRANSFER_CHUNK * 2 + 3])
def test_frames_read_in_place_carry_the_id_and_the_file_in_order(tmp_path: Path, size: int) -> None:
    """Each frame is the id then the next chunk; two buffers taking turns give back the
    whole file and its sha256; the end of the file is None."""
    data = os.urandom(size)
    (tmp_path / "f").write_bytes(data)
    hasher = hashlib.sha256()
    buffers = (new_frame_buffer(), new_frame_buffer())
    received = bytearray()
    with (tmp_path / "f").open("rb") as handle:
        turn = 0
        while (frame := read_frame_and_hash(handle, hasher, 0xCAFE, buffers[turn % 2])) is not None:
            transfer_id, chunk = parse_binary_frame(bytes(frame))
            assert transfer_id == 0xCAFE and 0 < len(chunk) <= MAX_TRANSFER_CHUNK
            received += chunk
            turn += 1
    assert bytes(received) == data
    assert hasher.hexdigest() == hashlib.sha256(data).hexdigest()


def test_the_write_behind_file_writes_every_byte_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Across many write-behind stretches (made small here), from bytes and views of
    reused buffers, the file holds exactly what was written, and it survives fsync."""
    monkeypatch.setattr(transfer, "WRITE_BEHIND", 64 * 1024)
    expected = bytearray()
    target = WriteBehindFile(tmp_path / "out")
    buffer = bytearray(50_000)
    for i in range(40):
        chunk = os.urandom(1 + i * 997)
        if i % 2:
            buffer[: len(chunk)] = chunk
            assert target.write(memoryview(buffer)[: len(chunk)]) == len(chunk)
        else:
            assert target.write(chunk) == len(chunk)
        expected += chunk
    target.flush()
    os.fsync(target.fileno())
    assert not target.closed
    target.close()
    assert target.closed
    assert (tmp_path / "out").read_bytes() == bytes(expected)


def test_writing_to_a_closed_write_behind_file_fails(tmp_path: Path) -> None:
    """A transfer that failed meanwhile closed its file: a late chunk raises ValueError,
    which the receivers turn into the transfer's error."""
    target = WriteBehindFile(tmp_path / "out")
    target.close()
    with pytest.raises(ValueError):
        target.write(b"late")
