"""The Read tool: numbered lines of a text file, or an image as a structured content block.

A file is text when its first 8 KiB hold no NUL byte and decode as UTF-8 (and every line
returned decodes too). Text comes back as `{lineNum}\\t{line}` lines numbered from
offset + 1 (no padding), CR before LF stripped. The file is read line by line and a
line is held only up to MAX_LINE_CHARS: a longer one (a minified bundle, a one-line
dump) comes back cut, and the result's `note` names the cut lines, so a file of any
size costs the node little memory. At most 256 Ki characters of line text are returned
per call; a larger range is an error that suggests an offset and limit that fit, so a
huge log can still be read in parts (the original had no cap). Other files are sniffed
by magic bytes: images up to 10 MiB are returned base64 as `{content: [text block,
image block]}`; anything else is an error naming the detected type.
"""

from __future__ import annotations

import base64
import codecs
import os
import stat
from typing import Any
from typing import BinaryIO

from pydantic import Field

from gsv_core.errors import ToolFailed
from gsv_core.node.tools.base import LATER
from gsv_core.node.tools.base import ToolParams
from gsv_core.node.tools.base import WorkspaceTool
from gsv_core.node.tools.base import run_blocking
from gsv_core.sniff import HEAD_BYTES
from gsv_core.sniff import is_image
from gsv_core.sniff import sniff_mime

MAX_IMAGE_BYTES = 10 * 1024 * 1024
MAX_TEXT_CHARS = 256 * 1024
MAX_LINE_CHARS = 16 * 1024
TEXT_PROBE_BYTES = 8192
# files up to this size are read on the event loop: cheaper than a worker thread
INLINE_READ_BYTES = 64 * 1024
_CR = "\r"
# enough bytes for MAX_LINE_CHARS characters of UTF-8, and one more to see it goes on
_LINE_BYTES = MAX_LINE_CHARS * 4 + 4


class ReadParams(ToolParams):
    path: str = Field(description="File to read.")
    offset: int = Field(0, ge=0, description="First line (0-based).")
    limit: int | None = Field(None, ge=1, description="Most lines (default: all).")


class ReadTool(WorkspaceTool[ReadParams]):
    name = "Read"
    capability = "filesystem.read"
    description = (
        "Read a file on this node. Text comes back as numbered lines ('{lineNum}\\t{line}' "
        "from offset + 1), at most 256 Ki characters a call (lines over 16 Ki are cut): page "
        "with offset and limit. Images up to 10 MB come back as images; other binary "
        "files are refused."
    )
    Params = ReadParams

    def run_now(self, params: ReadParams) -> Any:
        # a thread hop costs more than reading a few KiB: small files are read inline
        path = self.workspace.resolve(params.path)
        size = _small_file_size(path)
        if size is None:
            return LATER
        return read_small_file(path, size, params.offset, params.limit)

    async def run(self, params: ReadParams) -> dict[str, Any]:
        path = self.workspace.resolve(params.path)
        return await run_blocking(lambda _: read_file(path, params.offset, params.limit))


def _small_file_size(path: str) -> int | None:
    """The size of a regular file small enough to read on the event loop, else None."""
    try:
        info = os.stat(path)
    except OSError:
        return None  # read_file reports the error, in a thread like any other read
    if stat.S_ISREG(info.st_mode) and info.st_size <= INLINE_READ_BYTES:
        return info.st_size
    return None


def read_small_file(path: str, size: int, offset: int, limit: int | None) -> dict[str, Any]:
    """`read_file` for a small file: plain UTF-8 text is read with one open and one read
    (the common case, kept short for tool latency); anything else goes to `read_file`."""
    data = _read_at_most(path, size + 1)
    if data is None or len(data) > size or b"\x00" in data:  # unreadable, grew, or binary
        return read_file(path, offset, limit)
    try:
        text = data.decode()
    except UnicodeDecodeError:
        return read_file(path, offset, limit)
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the newline ending the last line does not start another
    chosen = lines[offset:] if limit is None else lines[offset : offset + limit]
    if any(len(line) > MAX_LINE_CHARS for line in chosen):
        return read_file(path, offset, limit)  # it words the note on cut lines
    numbered = [f"{n}\t{line.removesuffix(_CR)}" for n, line in enumerate(chosen, offset + 1)]
    return {"path": path, "content": "\n".join(numbered), "lines": len(numbered)}


def _read_at_most(path: str, count: int) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        return os.read(fd, count)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_file(path: str, offset: int, limit: int | None) -> dict[str, Any]:
    """Read `path` as numbered text lines or an image content result (blocking)."""
    try:
        info = os.stat(path)
        if stat.S_ISDIR(info.st_mode):
            raise ToolFailed(f"'{path}' is a directory, not a file (use Glob to list it)")
        if not stat.S_ISREG(info.st_mode):
            raise ToolFailed(f"'{path}' is not a regular file")
        with open(path, "rb") as handle:
            head = handle.read(TEXT_PROBE_BYTES)
            if not _looks_like_text(head, complete=len(head) >= info.st_size):
                return _read_binary(path, handle, head, info.st_size)
            handle.seek(0)
            return _read_text(path, handle, offset, limit, info.st_size)
    except OSError as exc:
        raise ToolFailed(f"Failed to read '{path}': {exc.strerror or exc}") from None


def _looks_like_text(head: bytes, *, complete: bool) -> bool:
    if b"\x00" in head:
        return False
    try:
        # Not final unless the whole file is here: the probe may cut a character in two.
        codecs.getincrementaldecoder("utf-8")().decode(head, final=complete)
    except UnicodeDecodeError:
        return False
    return True


def _read_text(
    path: str, handle: BinaryIO, offset: int, limit: int | None, size: int
) -> dict[str, Any]:
    numbered: list[str] = []
    cut: list[int] = []
    chars = 0
    number = 0
    while limit is None or len(numbered) < limit:
        raw, whole = _next_line(handle)
        if raw is None:
            break
        number += 1
        if number <= offset:
            continue
        try:
            line = _decoded(raw, whole)
        except UnicodeDecodeError:
            raise _binary_error(path, None, size) from None
        if not whole or len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS]
            cut.append(number)
        chars += len(line) + 1
        if chars > MAX_TEXT_CHARS:
            raise _range_too_large(path, offset, len(numbered))
        numbered.append(f"{number}\t{line}")
    result: dict[str, Any] = {"path": path, "content": "\n".join(numbered), "lines": len(numbered)}
    if cut:
        result["note"] = _cut_note(cut)
    return result


def _decoded(raw: bytes, whole: bool) -> str:
    """The line's text; of a line read only in part, the characters read whole."""
    if whole:
        return raw.decode("utf-8").removesuffix("\n").removesuffix("\r")
    return codecs.getincrementaldecoder("utf-8")().decode(raw, final=False)


def _next_line(handle: BinaryIO) -> tuple[bytes | None, bool]:
    """The next line (None at EOF) and whether it was read whole (not over-long)."""
    raw = handle.readline(_LINE_BYTES)
    if not raw:
        return None, True
    if raw.endswith(b"\n") or len(raw) < _LINE_BYTES:
        return raw, True
    while (rest := handle.readline(_LINE_BYTES)) and not rest.endswith(b"\n"):
        pass  # skip the remainder of an over-long line without holding it in memory
    return raw, False


def _cut_note(lines: list[int]) -> str:
    numbers = ", ".join(str(number) for number in lines)
    return (
        f"line(s) {numbers} are longer than {MAX_LINE_CHARS} characters and were cut "
        f"there; see the rest with Grep, or Bash (e.g. cut -c{MAX_LINE_CHARS + 1}-)"
    )


def _range_too_large(path: str, offset: int, fitting: int) -> ToolFailed:
    return ToolFailed(
        f"'{path}' has more than {MAX_TEXT_CHARS // 1024} KiB of text from line {offset + 1}; "
        f"read it in parts with offset and limit, e.g. offset={offset} limit={fitting}"
    )


def _read_binary(path: str, handle: BinaryIO, head: bytes, size: int) -> dict[str, Any]:
    mime = sniff_mime(head[:HEAD_BYTES])
    if not is_image(mime):
        raise _binary_error(path, mime, size)
    name = os.path.basename(path)
    if size > MAX_IMAGE_BYTES:
        raise ToolFailed(
            f"Image file too large: {name} ({size} bytes, max {MAX_IMAGE_BYTES} bytes)"
        )
    data = head + handle.read()
    return {
        "content": [
            {"type": "text", "text": f"Image file: {name} ({mime}, {len(data)} bytes)"},
            {"type": "image", "data": base64.b64encode(data).decode("ascii"), "mimeType": mime},
        ]
    }


def _binary_error(path: str, mime: str | None, size: int) -> ToolFailed:
    kind = mime or "unknown type"
    name = os.path.basename(path)
    return ToolFailed(f"Binary file: {name} ({kind}, {size} bytes) — not a text or image file")
