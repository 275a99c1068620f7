"""File type sniffing from magic bytes, for a node's Read (images and the "not a text
file" error) and for images sent with `chat.send` (their bytes must be the type named).

A small table instead of a dependency: the image types a model can look at, plus the
common binary formats so the "not a text file" error can say what the file is.
"""

from __future__ import annotations

HEAD_BYTES = 512

_SIGNATURES: tuple[tuple[int, bytes, str], ...] = (
    (0, b"\x89PNG\r\n\x1a\n", "image/png"),
    (0, b"\xff\xd8\xff", "image/jpeg"),
    (0, b"GIF87a", "image/gif"),
    (0, b"GIF89a", "image/gif"),
    (0, b"BM", "image/bmp"),
    (0, b"II*\x00", "image/tiff"),
    (0, b"MM\x00*", "image/tiff"),
    (0, b"\x00\x00\x01\x00", "image/x-icon"),
    (0, b"%PDF-", "application/pdf"),
    (0, b"PK\x03\x04", "application/zip"),
    (0, b"\x1f\x8b", "application/gzip"),
    (0, b"BZh", "application/x-bzip2"),
    (0, b"\xfd7zXZ\x00", "application/x-xz"),
    (0, b"(\xb5/\xfd", "application/zstd"),
    (0, b"7z\xbc\xaf\x27\x1c", "application/x-7z-compressed"),
    (0, b"\x7fELF", "application/x-executable"),
    (0, b"\xcf\xfa\xed\xfe", "application/x-mach-binary"),
    (0, b"MZ", "application/x-msdownload"),
    (0, b"\x00asm", "application/wasm"),
    (0, b"SQLite format 3\x00", "application/vnd.sqlite3"),
    (0, b"OggS", "audio/ogg"),
    (0, b"fLaC", "audio/x-flac"),
    (0, b"ID3", "audio/mpeg"),
    (257, b"ustar", "application/x-tar"),
)

_RIFF = {b"WEBP": "image/webp", b"WAVE": "audio/x-wav", b"AVI ": "video/x-msvideo"}
_FTYP = {b"avif": "image/avif", b"heic": "image/heic", b"heix": "image/heic"}


def sniff_mime(head: bytes) -> str | None:
    """The MIME type announced by a file's first bytes, or None when unknown."""
    if head[:4] == b"RIFF" and head[8:12] in _RIFF:
        return _RIFF[head[8:12]]
    if head[4:8] == b"ftyp":
        return _FTYP.get(head[8:12], "video/mp4")
    for offset, magic, mime in _SIGNATURES:
        if head[offset : offset + len(magic)] == magic:
            return mime
    return None


def is_image(mime: str | None) -> bool:
    return mime is not None and mime.startswith("image/")
