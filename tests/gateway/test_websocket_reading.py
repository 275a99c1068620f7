"""How our connections read frames (websockets' parser, read through `dispatch_messages`):
byte streams built with websockets' own `Frame.serialize`, cut at every offset, mixed with
pings and fragments, and broken in every way websockets refuses."""

from __future__ import annotations

import asyncio
import struct

import pytest
from websockets.exceptions import ConnectionClosedError
from websockets.frames import Frame
from websockets.frames import Opcode

from tests.gateway.test_websocket_dispatch import READY
from tests.gateway.test_websocket_dispatch import raw_client
from tests.gateway.test_websocket_dispatch import serving
from tests.gateway.test_websocket_dispatch import until
from tests.waiting import WAIT


def frame(opcode: Opcode, data: bytes, *, fin: bool = True) -> bytes:
    """A client frame (masked) as websockets writes it."""
    return Frame(opcode, data, fin=fin).serialize(mask=True, extensions=[])


def with_rsv1(wire: bytes) -> bytes:
    """The frame with its first reserved bit set (no extension was agreed)."""
    return bytes([wire[0] | 0x40]) + wire[1:]


def text(message: str) -> bytes:
    return frame(Opcode.TEXT, message.encode())


LONG_TEXT = "x" * 70_000  # a 64-bit length header
MEDIUM_BINARY = bytes(range(256)) + b"tail"  # a 16-bit length header

# (bytes on the wire, what the handler must get): data frames of each header size, a
# ping between them, a fragmented message around a pong, UTF-8 beyond ASCII
STREAM = [
    (text("hello"), ["hello"]),
    (frame(Opcode.BINARY, MEDIUM_BINARY), [MEDIUM_BINARY]),
    (frame(Opcode.PING, b"are you there"), []),
    (text("apr\u00e8s"), ["apr\u00e8s"]),
    (frame(Opcode.TEXT, b"frag", fin=False), []),
    (frame(Opcode.PONG, b""), []),
    (frame(Opcode.CONT, b"mented", fin=True), ["fragmented"]),
    (frame(Opcode.BINARY, b""), [b""]),
    (text(LONG_TEXT), [LONG_TEXT]),
    (text("last"), ["last"]),
]
WIRE = b"".join(data for data, _ in STREAM)
EXPECTED = [message for _, messages in STREAM for message in messages]


async def fed_in_pieces(pieces: list[bytes]) -> list[str | bytes]:
    """Hand a live server connection these pieces as successive socket reads (what TCP
    may do to the stream) and return what its handler got."""
    got: list[str | bytes] = []
    async with serving(got.append) as served, raw_client(served.url) as ws:
        assert await ws.recv() == READY
        conn = served.conns[0]
        for piece in pieces:
            conn.data_received(piece)
        await until(lambda: len(got) >= len(EXPECTED))
        assert ws.state.name == "OPEN" and conn.state.name == "OPEN"
    return got


async def test_a_stream_cut_at_every_offset_gives_the_same_messages() -> None:
    """Every cut of the stream into two reads (headers, masks and payloads split, a
    cut inside a fragmented message or a ping) yields the same messages in order."""
    before_long = sum(len(data) for data, _ in STREAM[:8])  # up to the 70,000-byte frame
    cuts = [*range(1, before_long + 20), *range(len(WIRE) - 100, len(WIRE))]
    for cut in cuts:
        got = await fed_in_pieces([WIRE[:cut], WIRE[cut:]])
        assert got == EXPECTED, cut


async def test_a_stream_read_a_byte_at_a_time_and_all_at_once() -> None:
    assert await fed_in_pieces([WIRE[i : i + 1] for i in range(len(WIRE))]) == EXPECTED
    assert await fed_in_pieces([WIRE]) == EXPECTED


async def test_a_ping_between_data_frames_is_answered_and_the_data_kept_in_order() -> None:
    """Over the real socket: a ping written between two data frames gets its pong
    while both messages reach the handler in order."""
    got: list[str | bytes] = []
    async with serving(got.append) as served, raw_client(served.url) as ws:
        assert await ws.recv() == READY
        ws.transport.write(text("before"))
        pong = await ws.ping(b"between")
        ws.transport.write(text("after"))
        async with asyncio.timeout(WAIT):
            await pong
        await until(lambda: len(got) == 2)
    assert got == ["before", "after"]


BROKEN = [
    pytest.param(Frame(Opcode.TEXT, b"plain").serialize(mask=False), 1002, id="unmasked"),
    pytest.param(with_rsv1(text("rsv")), 1002, id="reserved-bit"),
    pytest.param(bytes([0x83, 0x80]) + b"\x00" * 4, 1002, id="unknown-opcode"),
    pytest.param(frame(Opcode.CONT, b"orphan"), 1002, id="continuation-first"),
    pytest.param(frame(Opcode.TEXT, b"\xc3\x28"), 1007, id="invalid-utf8"),
    # a header announcing 2 MiB (websockets' default limit is 1 MiB); no payload needed
    pytest.param(
        bytes([0x81, 0xFF]) + struct.pack("!Q", 2 << 20) + b"\x00" * 4, 1009, id="too-big"
    ),
]


@pytest.mark.parametrize(("wire", "code"), BROKEN)
async def test_a_broken_frame_closes_with_websockets_code_and_nothing_after_it_is_read(
    wire: bytes, code: int
) -> None:
    got: list[str | bytes] = []
    async with serving(got.append) as served, raw_client(served.url) as ws:
        assert await ws.recv() == READY
        ws.transport.write(text("fine") + wire + text("never read"))
        with pytest.raises(ConnectionClosedError) as closed:
            async with asyncio.timeout(WAIT):
                await ws.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == code
    assert got == ["fine"]
