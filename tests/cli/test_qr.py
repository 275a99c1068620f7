"""Terminal QR codes: PNG images written here (every filter type and the colour types QR
generators use) are decoded, sampled back to their module matrix and drawn with half
blocks that read back to the same matrix; damaged or foreign images are clear errors."""

from __future__ import annotations

import pytest

from gsv_cli.qr import QUIET
from gsv_cli.qr import QrError
from gsv_cli.qr import decode_png
from gsv_cli.qr import modules
from gsv_cli.qr import terminal_qr
from tests.fakes.qr_png import png
from tests.fakes.qr_png import qr_matrix
from tests.fakes.qr_png import read_back

# -- tests --------------------------------------------------------------------------------


@pytest.mark.parametrize(("colour", "depth"), [(6, 8), (2, 8), (0, 8), (4, 8), (3, 8), (0, 1)])
def test_a_png_qr_round_trips_through_the_terminal_drawing(colour: int, depth: int) -> None:
    """Every supported PNG kind decodes to the code's exact modules, drawn and read back."""
    matrix = qr_matrix()
    drawn = terminal_qr(png(matrix, colour=colour, depth=depth))
    assert read_back(drawn) == matrix


@pytest.mark.parametrize("scale", [1, 3, 8])
def test_module_size_comes_from_the_finder_pattern(scale: int) -> None:
    """Scale 1 to 8 px per module, bigger codes too: the matrix comes back the same."""
    matrix = qr_matrix(count=33, seed=scale)
    assert modules(decode_png(png(matrix, scale=scale))) == matrix


def test_the_drawing_has_a_light_quiet_zone() -> None:
    """The first and last lines are all ink (light): scanners need the margin."""
    lines = terminal_qr(png(qr_matrix())).splitlines()
    assert set(lines[0]) == {"█"} and set(lines[-1]) == {"█"}
    assert all(len(line) == len(qr_matrix()) + 2 * QUIET for line in lines)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"GIF89a...", "not a PNG image"),
        (b"\x89PNG\r\n\x1a\n", "truncated PNG image"),
        (png(qr_matrix())[:200], "damaged PNG image|truncated PNG image"),
        (png([[False] * 25 for _ in range(25)]), "no dark pixels"),
        (png([[True, False] * 10 for _ in range(20)]), "no QR code found"),
    ],
)
def test_images_that_are_no_readable_qr_code_are_clear_errors(data: bytes, message: str) -> None:
    """Foreign, truncated, blank and code-less images raise QrError saying which."""
    with pytest.raises(QrError, match=message):
        terminal_qr(data)


def test_interlaced_pngs_are_refused() -> None:
    """Interlaced images are not decoded (QR generators do not write them)."""
    data = bytearray(png(qr_matrix()))
    data[8 + 8 + 12] = 1  # IHDR interlace byte
    with pytest.raises(QrError, match="unsupported PNG"):
        decode_png(bytes(data))
