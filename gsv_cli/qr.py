"""A QR code image (the PNG of a `qrDataUrl`) drawn in the terminal with half blocks, so
`gsv channels login` can be scanned straight off the screen.

Only the PNG subset QR generators write is decoded (8-bit grey, grey+alpha, RGB, RGBA
or palette, and 1-bit grey; no interlace), with the standard library. The module size
comes from the top-left finder pattern (a dark run 7 modules wide), and each module is
sampled at its centre. Anything else raises `QrError`; the caller then falls back to
saving the image.
"""

from __future__ import annotations

import struct
import zlib

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}  # colour type -> samples per pixel
QUIET = 2  # light modules drawn around the code (scanners need a margin)


class QrError(ValueError):
    """The image is not a PNG this module can read, or holds no recognisable QR code."""


def terminal_qr(png: bytes) -> str:
    """The QR code in `png` as lines of half blocks, light modules drawn as ink (for
    the usual dark terminal background), with a quiet zone."""
    try:
        return render(modules(decode_png(png)))
    except (zlib.error, struct.error, IndexError) as exc:  # a damaged file, said plainly
        raise QrError(f"damaged PNG image ({exc})") from None


def decode_png(png: bytes) -> list[list[bool]]:
    """The image as rows of dark (True) / light pixels."""
    if not png.startswith(PNG_SIGNATURE):
        raise QrError("not a PNG image")
    header, palette, data = _chunks(png)
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    if interlace or colour not in CHANNELS or (depth != 8 and (depth, colour) != (1, 0)):
        raise QrError(f"unsupported PNG (colour type {colour}, depth {depth})")
    if depth == 1:
        rows = _unfilter(zlib.decompress(data), (width + 7) // 8, height, 1)
        return [[not (row[x // 8] >> (7 - x % 8)) & 1 for x in range(width)] for row in rows]
    channels = CHANNELS[colour]
    rows = _unfilter(zlib.decompress(data), width * channels, height, channels)
    return [[_dark(row, x * channels, colour, palette) for x in range(width)] for row in rows]


def _chunks(png: bytes) -> tuple[bytes, bytes, bytes]:
    header, palette, data = b"", b"", bytearray()
    at = len(PNG_SIGNATURE)
    while at + 8 <= len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        kind, body = png[at + 4 : at + 8], png[at + 8 : at + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"PLTE":
            palette = body
        elif kind == b"IDAT":
            data += body
        elif kind == b"IEND":
            break
        at += 12 + length
    if len(header) != 13 or not data:
        raise QrError("truncated PNG image")
    return header, palette, bytes(data)


def _unfilter(raw: bytes, stride: int, height: int, bpp: int) -> list[bytes]:
    """Undo the per-row PNG filters (None, Sub, Up, Average, Paeth)."""
    if len(raw) < (stride + 1) * height:
        raise QrError("truncated PNG image data")
    rows: list[bytes] = []
    previous = bytes(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up, corner = previous[i], previous[i - bpp] if i >= bpp else 0
            line[i] = (line[i] + _predict(kind, left, up, corner)) & 0xFF
        rows.append(bytes(line))
        previous = rows[-1]
    return rows


def _predict(kind: int, left: int, up: int, corner: int) -> int:
    if kind == 0:
        return 0
    if kind == 1:
        return left
    if kind == 2:
        return up
    if kind == 3:
        return (left + up) // 2
    if kind == 4:
        guess = left + up - corner
        distances = (abs(guess - left), abs(guess - up), abs(guess - corner))
        return (left, up, corner)[distances.index(min(distances))]
    raise QrError(f"bad PNG filter type {kind}")


def _dark(row: bytes, at: int, colour: int, palette: bytes) -> bool:
    if colour == 3:
        index = row[at] * 3
        if index + 3 > len(palette):
            raise QrError("PNG palette index out of range")
        r, g, b = palette[index : index + 3]
        return (r + g + b) < 384
    if colour in (0, 4):
        grey, alpha = row[at], row[at + 1] if colour == 4 else 255
        return alpha >= 128 and grey < 128
    r, g, b = row[at : at + 3]
    alpha = row[at + 3] if colour == 6 else 255
    return alpha >= 128 and (r + g + b) < 384


def modules(pixels: list[list[bool]]) -> list[list[bool]]:
    """The QR matrix: one boolean per module, sampled at module centres."""
    dark_rows = [y for y, row in enumerate(pixels) if any(row)]
    if not dark_rows:
        raise QrError("the image has no dark pixels")
    top = dark_rows[0]
    left = min(row.index(True) for row in pixels if any(row))
    right = max(len(row) - 1 - row[::-1].index(True) for row in pixels if any(row))
    run = 0
    while left + run < len(pixels[top]) and pixels[top][left + run]:
        run += 1
    size = run / 7  # the finder pattern's top edge is 7 modules of dark
    count = round((right - left + 1) / size) if size else 0
    if size < 1 or count < 21 or (count - 21) % 4:
        raise QrError("no QR code found in the image")
    return [
        [pixels[int(top + (r + 0.5) * size)][int(left + (c + 0.5) * size)] for c in range(count)]
        for r in range(count)
    ]


def render(matrix: list[list[bool]]) -> str:
    """Two module rows per text line: ▀ top light, ▄ bottom light, █ both, space none."""
    width = len(matrix) + 2 * QUIET
    light = [[False] * width for _ in range(QUIET)]
    padded = light + [[False] * QUIET + row + [False] * QUIET for row in matrix] + light
    padded = [[not dark for dark in row] for row in padded]  # ink = light modules
    if len(padded) % 2:
        padded.append([True] * width)  # more quiet zone
    glyphs = {(True, True): "█", (True, False): "▀", (False, True): "▄", (False, False): " "}
    return "\n".join(
        "".join(glyphs[(top, bottom)] for top, bottom in zip(upper, lower, strict=True))
        for upper, lower in zip(padded[::2], padded[1::2], strict=True)
    )
