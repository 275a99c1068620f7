"""Transcript archives: gzip JSON Lines files, written atomically.

The first line is `{"meta": {...}}` (session key and id, agent, message count, usage,
archive time); every following line is one stored message, in order.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from gsv_core.fsmodes import write_private_file


def write_archive(path: Path, messages: list[dict[str, Any]], meta: dict[str, Any]) -> None:
    lines = [json.dumps({"meta": meta}, ensure_ascii=False)]
    lines.extend(json.dumps(message, ensure_ascii=False) for message in messages)
    write_private_file(path, gzip.compress(("\n".join(lines) + "\n").encode("utf-8")))


def read_archive(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(meta, messages) of an archive file."""
    try:
        return parse_archive(path.read_bytes())
    except ValueError as exc:
        raise ValueError(f"{path} is not a gsv transcript archive") from exc


def parse_archive(data: bytes) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(meta, messages) of an archive's bytes; ValueError when it is none."""
    try:
        text = gzip.decompress(data).decode("utf-8")
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not a gsv transcript archive: {exc}") from None
    if not lines or not isinstance(lines[0], dict) or "meta" not in lines[0]:
        raise ValueError("not a gsv transcript archive")
    return lines[0]["meta"], [m for m in lines[1:] if isinstance(m, dict)]
