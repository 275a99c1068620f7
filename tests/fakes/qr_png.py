"""QR-shaped test images: a module matrix with real finder patterns, a PNG writer that is
independent of gsv_cli.qr's decoder (every filter type, the colour types QR generators
write), and a reader for the terminal drawing."""

from __future__ import annotations

import random
import struct
import zlib

from gsv_cli.qr import QUIET


def qr_matrix(count: int = 25, seed: int = 3) -> list[list[bool]]:
    """Finder patterns with their light separators in three corners (as real codes have),
    random modules elsewhere."""
    rng = random.Random(seed)
    grid = [[rng.random() < 0.5 for _ in range(count)] for _ in range(count)]
    for top, left in ((0, 0), (0, count - 8), (count - 8, 0)):
        for r in range(8):
            for c in range(8):
                # the 7x7 finder sits in the 8x8 corner block; the rest is its separator
                fr, fc = r - (0 if top == 0 else 1), c - (0 if left == 0 else 1)
                ring = max(abs(fr - 3), abs(fc - 3))
                grid[top + r][left + c] = ring <= 3 and ring != 2
    return grid


def paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def filtered(row: bytes, prev: bytes, kind: int, bpp: int) -> bytes:
    out = bytearray()
    for i, value in enumerate(row):
        a = row[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        guess = [0, a, b, (a + b) // 2, paeth(a, b, c)][kind]
        out.append((value - guess) & 0xFF)
    return bytes([kind]) + bytes(out)


def png(
    matrix: list[list[bool]], scale: int = 4, border: int = 4, colour: int = 6, depth: int = 8
) -> bytes:
    """A PNG of `matrix` (dark = black), `scale` px per module, with a white border."""
    side = (len(matrix) + 2 * border) * scale

    def dark(x: int, y: int) -> bool:
        r, c = y // scale - border, x // scale - border
        return 0 <= r < len(matrix) and 0 <= c < len(matrix) and matrix[r][c]

    rows: list[bytes] = []
    for y in range(side):
        if depth == 1:
            bits = [0 if dark(x, y) else 1 for x in range(side)] + [0] * 7
            rows.append(bytes(int("".join(map(str, bits[i : i + 8])), 2)
                              for i in range(0, side, 8)))  # fmt: skip
            continue
        pixel = {0: lambda d: [0 if d else 255], 2: lambda d: [0 if d else 255] * 3,
                 3: lambda d: [1 if d else 0], 4: lambda d: [0 if d else 255, 255],
                 6: lambda d: [0 if d else 255] * 3 + [255]}[colour]  # fmt: skip
        rows.append(bytes(v for x in range(side) for v in pixel(dark(x, y))))
    bpp = 1 if depth == 1 else len(rows[0]) // side
    raw, prev = bytearray(), bytes(len(rows[0]))
    for y, row in enumerate(rows):
        raw += filtered(row, prev, y % 5, bpp)  # every filter type in turn
        prev = row

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body)
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", side, side, depth, colour, 0, 0, 0)
    palette = chunk(b"PLTE", bytes([255, 255, 255, 0, 0, 0])) if colour == 3 else b""
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + palette
            + chunk(b"IDAT", zlib.compress(bytes(raw))) + chunk(b"IEND", b""))  # fmt: skip


def read_back(drawn: str) -> list[list[bool]]:
    """The drawing's modules (dark = True), quiet zone stripped."""
    halves = {"█": (True, True), "▀": (True, False), "▄": (False, True), " ": (False, False)}
    ink: list[list[bool]] = []
    for line in drawn.splitlines():
        pairs = [halves[ch] for ch in line]
        ink += [[p[0] for p in pairs], [p[1] for p in pairs]]
    dark = [[not lit for lit in row] for row in ink]
    inner = dark[QUIET : QUIET + len(dark[0]) - 2 * QUIET]
    return [row[QUIET:-QUIET] for row in inner]
