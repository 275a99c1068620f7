"""Transfers that go wrong at the source: it vanishes mid-stream, stalls past the idle
timeout, or sends bytes that do not match the sha256 it claims. A real gateway and a real
destination node (or the workspace); the source is a hand-written node on a raw socket.
Every failure is a clear error and leaves no file, whole or partial, at the destination."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from gsv_core.errors import GsvError
from gsv_core.errors import TimedOut
from gsv_core.gateway.server import RunningGateway
from tests.transfers.nodes import leftovers
from tests.transfers.nodes import node
from tests.transfers.nodes import raw_source
from tests.transfers.nodes import transfer
from tests.transfers.nodes import until
from tests.transfers.nodes import workspace_of

SIZE = 3 * 256 * 1024 + 17
DESTINATIONS = ["b:sub/out.bin", "gsv:workspace/sub/out.bin"]


def destination_folder(gw: RunningGateway, tmp_path: Path, destination: str) -> Path:
    return workspace_of(gw) if destination.startswith("gsv:") else tmp_path / "b"


async def assert_nothing_left(folder: Path) -> None:
    """No final file and (once the destination has heard of the failure) no temp file."""
    await until("the partial file to go", lambda: leftovers(folder) == [])
    assert not (folder / "sub" / "out.bin").exists()


@pytest.mark.parametrize("destination", DESTINATIONS)
async def test_a_source_that_disconnects_mid_transfer_fails_it_and_leaves_nothing(
    gw: RunningGateway, tmp_path: Path, destination: str
) -> None:
    """The source sends half the announced bytes then closes its socket: the transfer
    fails naming the node, and the destination (node or workspace) keeps no partial file."""
    data = os.urandom(SIZE)
    async with (
        node(gw.url, tmp_path / "b", "b"),
        raw_source(gw.url, "src", SIZE, data[: SIZE // 2], then="close"),
    ):
        with pytest.raises(GsvError, match="Node disconnected: src"):
            await transfer(gw, "src:/in.bin", destination)
        await assert_nothing_left(destination_folder(gw, tmp_path, destination))


@pytest.mark.parametrize("destination", DESTINATIONS)
async def test_a_stalled_source_times_out_and_both_ends_are_cleaned_up(
    gw: RunningGateway, tmp_path: Path, destination: str
) -> None:
    """Idle timeout (no stuck transfer): a source that stops sending fails the transfer with
    504; the destination drops its partial file and the source is told the transfer ended."""
    gw.gateway.transfers.idle_timeout = 0.2
    data = os.urandom(SIZE)
    async with (
        node(gw.url, tmp_path / "b", "b") as dest,
        raw_source(gw.url, "src", SIZE, data[: SIZE // 2], then="stall") as source,
    ):
        with pytest.raises(TimedOut, match="stalled"):
            await transfer(gw, "src:/in.bin", destination)
        await assert_nothing_left(destination_folder(gw, tmp_path, destination))
        await until("the source to hear the transfer ended", lambda: source.ends)
        assert "stalled" in source.ends[0]["error"]
        await until("the destination to forget it", lambda: dest.transfers.in_progress == 0)
    assert gw.gateway.transfers.active == 0


@pytest.mark.parametrize("destination", DESTINATIONS)
async def test_bytes_that_do_not_match_the_claimed_sha256_leave_no_file(
    gw: RunningGateway, tmp_path: Path, destination: str
) -> None:
    """The source sends the right count of wrong bytes and the sha256 of the right ones:
    the transfer fails on the checksum and the destination keeps nothing."""
    data = os.urandom(SIZE)
    wrong = bytearray(data)
    wrong[SIZE // 2] ^= 0xFF
    claimed = hashlib.sha256(data).hexdigest()
    async with (
        node(gw.url, tmp_path / "b", "b"),
        raw_source(gw.url, "src", SIZE, bytes(wrong), then="complete", sha256=claimed),
    ):
        with pytest.raises(GsvError, match="checksum"):
            await transfer(gw, "src:/in.bin", destination)
        await assert_nothing_left(destination_folder(gw, tmp_path, destination))


@pytest.mark.parametrize("destination", DESTINATIONS)
async def test_a_source_that_sends_too_few_bytes_leaves_no_file(
    gw: RunningGateway, tmp_path: Path, destination: str
) -> None:
    """A source that claims completion after half the announced size: a clear error, and
    the destination is told to drop what it has."""
    data = os.urandom(SIZE)
    claimed = hashlib.sha256(data).hexdigest()
    async with (
        node(gw.url, tmp_path / "b", "b"),
        raw_source(gw.url, "src", SIZE, data[: SIZE // 2], then="complete", sha256=claimed),
    ):
        with pytest.raises(GsvError, match=f"sent {SIZE // 2} of {SIZE} bytes"):
            await transfer(gw, "src:/in.bin", destination)
        await assert_nothing_left(destination_folder(gw, tmp_path, destination))
