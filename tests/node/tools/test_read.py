"""Read: numbered text lines, images as content blocks, clear errors for everything else."""

from __future__ import annotations

import base64
import gzip
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from gsv_core.errors import ToolFailed
from gsv_core.node.tools import Toolset
from gsv_core.node.tools.read import MAX_LINE_CHARS
from gsv_core.node.tools.read import MAX_TEXT_CHARS
from gsv_core.node.tools.read import read_file
from gsv_core.node.tools.read import read_small_file
from gsv_core.sniff import sniff_mime
from tests.node.tools.conftest import failure


def tiny_png() -> bytes:
    """A real 1x1 red PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


async def test_text_comes_back_as_numbered_lines(toolset: Toolset, workspace: Path) -> None:
    """Each line is "{n}\\t{line}" from 1, CR before LF dropped, path resolved."""
    (workspace / "a.txt").write_bytes(b"one\r\ntwo\nthree\n")
    result = await toolset.invoke("Read", {"path": "a.txt"})
    assert result == {
        "path": str(workspace / "a.txt"),
        "content": "1\tone\n2\ttwo\n3\tthree",
        "lines": 3,
    }


async def test_offset_and_limit_select_lines_numbered_from_offset_plus_one(
    toolset: Toolset, workspace: Path
) -> None:
    """offset skips lines (0-based) and numbering continues from offset + 1."""
    (workspace / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    result = await toolset.invoke("Read", {"path": "a.txt", "offset": 3, "limit": 2})
    assert (result["content"], result["lines"]) == ("4\tline 4\n5\tline 5", 2)


SMALL_FILES = [
    b"",
    b"\n",
    b"one",
    b"one\n",
    b"one\r\ntwo\r\n",
    b"a\n\n\nb\n\n",
    b"cr\ronly\nlone\r",
    "h\u00e9llo w\u00f6rld \u2603\n\u6f22\u5b57\n".encode(),
    b"bad \xff utf-8\n",
    b"nul \x00 inside\n",
    b"short\n" + b"x" * 20_000 + b"\nafter\n",  # a line over the cap: cut, with a note
]


@pytest.mark.parametrize("content", SMALL_FILES)
@pytest.mark.parametrize(("offset", "limit"), [(0, None), (1, None), (0, 1), (2, 2), (9, None)])
def test_the_small_file_path_answers_exactly_as_the_general_one(
    tmp_path: Path, content: bytes, offset: int, limit: int | None
) -> None:
    """Small files are read in one go on the event loop; results and errors are those
    of the general line-by-line reader, byte for byte."""
    path = tmp_path / "f.txt"
    path.write_bytes(content)

    def outcome(read: Any) -> Any:
        try:
            return read()
        except ToolFailed as exc:
            return ("failed", exc.message)

    quick = outcome(lambda: read_small_file(str(path), len(content), offset, limit))
    general = outcome(lambda: read_file(str(path), offset, limit))
    assert quick == general


async def test_offset_past_the_end_returns_no_lines(toolset: Toolset, workspace: Path) -> None:
    """Reading beyond the last line is not an error: zero lines."""
    (workspace / "a.txt").write_text("x\n")
    result = await toolset.invoke("Read", {"path": "a.txt", "offset": 5})
    assert (result["content"], result["lines"]) == ("", 0)


async def test_empty_file_has_no_lines(toolset: Toolset, workspace: Path) -> None:
    """An empty file is text with zero lines."""
    (workspace / "empty").write_bytes(b"")
    result = await toolset.invoke("Read", {"path": "empty"})
    assert (result["content"], result["lines"]) == ("", 0)


async def test_png_is_returned_as_an_image_block(toolset: Toolset, workspace: Path) -> None:
    """An image is a structured result: a text block and the base64 image with its type."""
    data = tiny_png()
    (workspace / "dot.png").write_bytes(data)
    result = await toolset.invoke("Read", {"path": "dot.png", "offset": 5, "limit": 1})
    text, image = result["content"]
    assert text == {"type": "text", "text": f"Image file: dot.png (image/png, {len(data)} bytes)"}
    assert image["type"] == "image"
    assert image["mimeType"] == "image/png"
    assert base64.b64decode(image["data"]) == data


async def test_image_over_10_mb_is_refused(toolset: Toolset, workspace: Path) -> None:
    """Images larger than 10 MiB are an error naming the size and the limit."""
    path = workspace / "big.png"
    path.write_bytes(tiny_png())
    with path.open("r+b") as handle:
        handle.truncate(10 * 1024 * 1024 + 1)  # sparse: cheap to create
    message = await failure(toolset, "Read", {"path": "big.png"})
    assert message == "Image file too large: big.png (10485761 bytes, max 10485760 bytes)"


async def test_known_binary_is_refused_with_its_type(toolset: Toolset, workspace: Path) -> None:
    """A gzip file is "Binary file: name (application/gzip, N bytes) — not a text or image file"."""
    data = gzip.compress(b"hello" * 100)
    (workspace / "a.gz").write_bytes(data)
    message = await failure(toolset, "Read", {"path": "a.gz"})
    assert message == (
        f"Binary file: a.gz (application/gzip, {len(data)} bytes) — not a text or image file"
    )


async def test_unknown_binary_is_refused(toolset: Toolset, workspace: Path) -> None:
    """Bytes of no known type with NULs are "unknown type"."""
    (workspace / "blob").write_bytes(b"\x01\x00\x02\x03" * 8)
    message = await failure(toolset, "Read", {"path": "blob"})
    assert message == "Binary file: blob (unknown type, 32 bytes) — not a text or image file"


async def test_invalid_utf8_in_a_returned_line_is_binary(toolset: Toolset, workspace: Path) -> None:
    """A file that only turns out non-UTF-8 after its first 8 KiB is refused when reached."""
    (workspace / "late").write_bytes(b"ok\n" * 5000 + b"\xff\xfe bad\n")
    head = await toolset.invoke("Read", {"path": "late", "limit": 2})
    assert head["content"] == "1\tok\n2\tok"
    message = await failure(toolset, "Read", {"path": "late", "offset": 4999})
    assert message.startswith("Binary file: late (unknown type, ")


async def test_a_directory_is_a_clear_error(toolset: Toolset, workspace: Path) -> None:
    """Reading a directory says so and points at Glob."""
    (workspace / "d").mkdir()
    message = await failure(toolset, "Read", {"path": "d"})
    assert message == f"'{workspace / 'd'}' is a directory, not a file (use Glob to list it)"


async def test_missing_file_is_a_clear_error(toolset: Toolset, workspace: Path) -> None:
    """A missing file fails with "Failed to read '{path}': {reason}"."""
    message = await failure(toolset, "Read", {"path": "nope.txt"})
    assert message == f"Failed to read '{workspace / 'nope.txt'}': No such file or directory"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"path": "a", "offset": -1}, "Invalid arguments: 'offset' must be >= 0 (got -1)"),
        ({"path": "a", "limit": 0}, "Invalid arguments: 'limit' must be >= 1 (got 0)"),
        (
            {"path": "a", "limit": "many"},
            "Invalid arguments: 'limit': Input should be a valid integer, unable to parse string as an integer",
        ),
        ({}, "Invalid arguments: 'path' is required"),
    ],
)
async def test_bad_arguments_are_refused(
    toolset: Toolset, args: dict[str, object], message: str
) -> None:
    """Negative offsets, non-positive limits and missing paths are invalid arguments."""
    assert await failure(toolset, "Read", args) == message


async def test_large_text_needs_offset_and_limit(toolset: Toolset, workspace: Path) -> None:
    """More than 256 Ki characters is an error suggesting a range that fits, which works."""
    line = "x" * 99
    count = MAX_TEXT_CHARS // 100 + 50
    (workspace / "big.log").write_text(f"{line}\n" * count)
    message = await failure(toolset, "Read", {"path": "big.log"})
    fitting = MAX_TEXT_CHARS // 100
    assert message == (
        f"'{workspace / 'big.log'}' has more than 256 KiB of text from line 1; "
        f"read it in parts with offset and limit, e.g. offset=0 limit={fitting}"
    )
    part = await toolset.invoke("Read", {"path": "big.log", "offset": 0, "limit": fitting})
    assert part["lines"] == fitting
    rest = await toolset.invoke("Read", {"path": "big.log", "offset": fitting})
    assert rest["lines"] == count - fitting
    assert rest["content"].startswith(f"{fitting + 1}\t")


async def test_a_huge_line_comes_back_cut_with_a_note(toolset: Toolset, workspace: Path) -> None:
    """A line longer than 16 Ki characters is cut there and the note names it; the lines
    around it come back whole."""
    (workspace / "min.js").write_text("short\n" + "y" * (MAX_TEXT_CHARS * 5) + "\nend\n")
    result = await toolset.invoke("Read", {"path": "min.js"})
    assert result["content"] == f"1\tshort\n2\t{'y' * MAX_LINE_CHARS}\n3\tend"
    assert result["lines"] == 3
    assert result["note"].startswith(f"line(s) 2 are longer than {MAX_LINE_CHARS} characters")
    tail = await toolset.invoke("Read", {"path": "min.js", "offset": 2})
    assert tail == {"path": str(workspace / "min.js"), "content": "3\tend", "lines": 1}


async def test_a_cut_never_splits_a_character(toolset: Toolset, workspace: Path) -> None:
    """Multi-byte characters across the cut: the line keeps whole characters only."""
    (workspace / "wide.txt").write_text("\u6f22" * (MAX_LINE_CHARS * 3) + "\n")
    result = await toolset.invoke("Read", {"path": "wide.txt"})
    assert result["content"] == "1\t" + "\u6f22" * MAX_LINE_CHARS
    assert "line(s) 1 " in result["note"]


async def test_invalid_utf8_inside_a_cut_line_is_binary(toolset: Toolset, workspace: Path) -> None:
    """Bad bytes in the part of a long line that is returned make the file binary."""
    (workspace / "bad.txt").write_bytes(b"ok\n" * 4000 + b"\xff" + b"z" * MAX_LINE_CHARS * 2)
    message = await failure(toolset, "Read", {"path": "bad.txt"})
    assert message.startswith("Binary file: bad.txt")


async def test_restricted_read_refuses_escapes(
    restricted: Toolset, workspace: Path, tmp_path: Path
) -> None:
    """With restrict_to_workspace, `..`, absolute paths outside and symlinks out are refused."""
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cret\n")
    (workspace / "link").symlink_to(secret)
    (workspace / "ok.txt").write_text("fine\n")
    for path in ("../secret.txt", str(secret), "link"):
        message = await failure(restricted, "Read", {"path": path})
        assert message.startswith(f"path '{path}' is outside the node workspace {workspace}")
    inside = await restricted.invoke("Read", {"path": str(workspace / "ok.txt")})
    assert inside["content"] == "1\tfine"


@pytest.mark.parametrize(
    ("head", "mime"),
    [
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg"),
        (b"GIF89a\x01\x00\x01\x00", "image/gif"),
        (b"RIFF\x24\x00\x00\x00WEBPVP8 ", "image/webp"),
        (b"BM\x3a\x00\x00\x00", "image/bmp"),
        (b"%PDF-1.7", "application/pdf"),
        (b"\x7fELF\x02\x01", "application/x-executable"),
        (b"plain text", None),
    ],
)
def test_sniffer_recognises_magic_bytes(head: bytes, mime: str | None) -> None:
    """The magic-byte table knows the common image and binary formats."""
    assert sniff_mime(head) == mime
