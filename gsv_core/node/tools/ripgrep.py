"""Grep's ripgrep backend: `rg --json` as a fast candidate finder held to Python's rules.

rg runs with flags that mirror `textsearch` (follow symlinks, hidden files, no ignore
files, `.git` skipped, CRLF line ends for `$`, no transcoding, 64 MiB size cap, sorted by
path), and every line it reports is re-checked: the file must pass `searchable_text` (no
NUL, valid UTF-8), the line must match with Python `re`, the name must pass `include`,
and in a restricted workspace no symlink on the way may point outside. So rg never
reports a match the Python backend would not. Where its regex dialect rejects a pattern
Python accepts (look-around, backreferences), `RgUnusable` tells the caller to fall back
to Python. Known gap: where both dialects accept a pattern but read it differently (a
`$` pattern that must match a lone CR inside a line, Unicode corners of the whitespace
and word classes), rg may miss a line Python would report.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import threading
from collections.abc import Callable, Iterator
from typing import Any

from gsv_core.node.tools.base import check_cancelled
from gsv_core.node.tools.textsearch import (
    MAX_FILE_BYTES,
    MAX_LINE_CHARS,
    SKIPPED_DIRS,
    GrepQuery,
    Match,
    searchable_text,
)

_GLOB_SYNTAX = frozenset("[]\\!{}/")


class RgUnusable(Exception):
    """rg refused the search before it started (for instance, an unsupported regex)."""


def rg_command(rg: str, query: GrepQuery) -> list[str]:
    command = [
        rg, "--json", "--no-config", "--no-messages", "--sort", "path", "--follow",
        "--hidden", "--no-ignore", "--encoding", "none",
        "--max-filesize", f"{MAX_FILE_BYTES // (1024 * 1024)}M",
    ]  # fmt: skip
    if "$" in query.regex.pattern:
        # `$` must match before "\r\n" as it does on Python's CR-stripped lines. Only
        # then: CRLF mode also stops `\s`, `.` and `[^x]` from matching a lone CR.
        command.append("--crlf")
    # Name globs rg understands exactly like fnmatch narrow the search; others are
    # left to the Python-side `include` check.
    if query.include_globs and not any(_GLOB_SYNTAX & set(g) for g in query.include_globs):
        for glob in query.include_globs:
            command += ["--glob", glob]
    for name in sorted(SKIPPED_DIRS):
        command += ["--glob", f"!{name}"]  # last, so it wins over the include globs
    return [*command, "--regexp", query.regex.pattern, "--", query.base]


def rg_matches(
    rg: str,
    query: GrepQuery,
    confined: Callable[[str], bool],
    cancelled: threading.Event,
) -> Iterator[Match]:
    """Matches in order; stopping the iteration stops rg."""
    process = subprocess.Popen(
        rg_command(rg, query),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdout is not None
    started = False
    checked: dict[str, bool] = {}
    try:
        for raw in process.stdout:
            check_cancelled(cancelled)
            started = True
            event = json.loads(raw)
            if event.get("type") != "match":
                continue
            match = _confirmed(query, event["data"], checked, confined)
            if match is not None:
                yield match
    finally:
        process.kill()
        process.wait()
        process.stdout.close()
    if not started and process.returncode == 2:
        raise RgUnusable


def _confirmed(
    query: GrepQuery,
    data: dict[str, Any],
    checked: dict[str, bool],
    confined: Callable[[str], bool],
) -> Match | None:
    path = _text(data["path"])
    line = data["lines"].get("text")
    if line is None or path is None:
        return None  # not UTF-8: the file will not pass `searchable_text` either
    line = line.removesuffix("\n").removesuffix("\r")
    if path not in checked:
        checked[path] = (
            query.wants(path)
            and _outside_skipped_dirs(query.base, path)
            and confined(path)
            and searchable_text(path) is not None
        )
    if not checked[path] or not query.regex.search(line):
        return None
    return Match(path, int(data["line_number"]), line[:MAX_LINE_CHARS])


def _text(field: dict[str, str]) -> str | None:
    if "text" in field:
        return field["text"]
    if "bytes" in field:
        return os.fsdecode(base64.b64decode(field["bytes"]))
    return None


def _outside_skipped_dirs(base: str, path: str) -> bool:
    parts = os.path.relpath(path, base).split(os.sep)
    return not any(part in SKIPPED_DIRS for part in parts)
