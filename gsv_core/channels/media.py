"""Attachments the adapters download: the kind of a MIME type, the note that stands in the
text for a file that was not downloaded, and sorting downloads from notes."""

from __future__ import annotations

from collections.abc import Iterable

from gsv_core.channels.base import Media

MEGABYTE = 1_048_576
_KINDS = {"image": "image", "audio": "audio", "video": "video"}


def media_kind(mime: str) -> str:
    """`image`, `audio`, `video` or `document`, from the MIME type's top level."""
    return _KINDS.get(mime.split("/", 1)[0], "document")


def too_big_note(label: str, size: int, limit: int) -> str:
    """The text that stands for an attachment over the size limit."""
    return (
        f"[attachment skipped: {label} is {size / MEGABYTE:.1f} MB, "
        f"over the {limit / MEGABYTE:g} MB limit]"
    )


def sort_downloads(results: Iterable[Media | str]) -> tuple[list[Media], list[str]]:
    """(downloaded media, notes for the text) of a message's download results."""
    media: list[Media] = []
    notes: list[str] = []
    for result in results:
        if isinstance(result, Media):
            media.append(result)
        else:
            notes.append(result)
    return media, notes
