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
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        lines = [json.loads(line) for line in fh if line.strip()]
    if not lines or "meta" not in lines[0]:
        raise ValueError(f"{path} is not a gsv transcript archive")
    return lines[0]["meta"], lines[1:]
