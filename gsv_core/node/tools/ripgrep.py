"""Grep's ripgrep backend: `rg --json` as a fast candidate finder held to Python's rules.

rg runs with flags that mirror `textsearch` (follow symlinks, hidden files, no ignore
files, `.git` skipped, CRLF line ends for `$`, no transcoding, 64 MiB size cap, sorted by
path), and every line it reports is re-checked: the file must pass `is_searchable` (no
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
import re
import subprocess
import threading
from collections.abc import Callable
from collections.abc import Iterator
from typing import Any

from gsv_core.node.tools.base import check_cancelled
from gsv_core.node.tools.textsearch import MAX_FILE_BYTES
from gsv_core.node.tools.textsearch import MAX_LINE_CHARS
from gsv_core.node.tools.textsearch import SKIPPED_DIRS
from gsv_core.node.tools.textsearch import GrepQuery
from gsv_core.node.tools.textsearch import Match
from gsv_core.node.tools.textsearch import is_searchable

_GLOB_SYNTAX = frozenset("[]\\!{}/")
# An rg event longer than this is a match on a huge line (a minified file, a one-line
# dump): it is read in pieces and never held whole, so a 16 MB line costs the node about
# this much, not 20x the line. Such a line is reported as rg found it (Python's
# re cannot re-check a line it does not hold), its content cut like any other.
LONG_EVENT_BYTES = 1 << 20
# structural (not inside a JSON string, where a quote is always escaped) line number
_LINE_NUMBER = re.compile(rb',"line_number":(\d+),')
_MATCH_PATH = re.compile(
    rb'^\{"type":"match","data":\{"path":(\{"(?:text|bytes)":"(?:[^"\\]|\\.)*"\})'
)
_LINE_START = b'"lines":{"text":"'


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
        for raw, line_number in _events(process.stdout):
            check_cancelled(cancelled)
            started = True
            if line_number is not None:  # a huge line, read in pieces
                match = _long_match(query, raw, line_number, checked, confined)
            else:
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


def _events(stream: Any) -> Iterator[tuple[bytes, int | None]]:
    """rg's JSON lines: a short one whole (None); a huge match as its first piece and the
    line number found further on (the rest is read and dropped, never held)."""
    while head := stream.readline(LONG_EVENT_BYTES):
        if head.endswith(b"\n") or len(head) < LONG_EVENT_BYTES:
            yield head, None
            continue
        number, window = None, b""
        while piece := stream.readline(LONG_EVENT_BYTES):
            window = window[-64:] + piece  # the number may straddle two pieces
            if number is None and (found := _LINE_NUMBER.search(window)):
                number = int(found.group(1))
            if piece.endswith(b"\n"):
                break
        if number is not None and head.startswith(b'{"type":"match"'):
            yield head, number


def _long_match(
    query: GrepQuery,
    head: bytes,
    line_number: int,
    checked: dict[str, bool],
    confined: Callable[[str], bool],
) -> Match | None:
    found = _MATCH_PATH.match(head)
    start = head.find(_LINE_START)
    if found is None or start < 0:
        return None
    path = _text(json.loads(found.group(1)))
    if path is None or not _allowed(query, path, checked, confined):
        return None
    return Match(path, line_number, _json_prefix(head[start + len(_LINE_START) :]), cut=True)


def _json_prefix(body: bytes) -> str:
    """The first characters of a JSON string whose end is cut off."""
    piece = body[: MAX_LINE_CHARS * 8].decode("utf-8", "ignore")
    for cut in range(len(piece), max(-1, len(piece) - 8), -1):  # not inside an escape
        try:
            text: str = json.loads(f'"{piece[:cut]}"')
        except ValueError:
            continue
        return text[:MAX_LINE_CHARS]
    return ""


def _allowed(
    query: GrepQuery, path: str, checked: dict[str, bool], confined: Callable[[str], bool]
) -> bool:
    if path not in checked:
        checked[path] = (
            query.wants(path)
            and _outside_skipped_dirs(query.base, path)
            and confined(path)
            and is_searchable(path)
        )
    return checked[path]


def _confirmed(
    query: GrepQuery,
    data: dict[str, Any],
    checked: dict[str, bool],
    confined: Callable[[str], bool],
) -> Match | None:
    path = _text(data["path"])
    line = data["lines"].get("text")
    if line is None or path is None:
        return None  # not UTF-8: the file will not pass `is_searchable` either
    line = line.removesuffix("\n").removesuffix("\r")
    if not _allowed(query, path, checked, confined) or not query.regex.search(line):
        return None
    return Match(path, int(data["line_number"]), line[:MAX_LINE_CHARS], len(line) > MAX_LINE_CHARS)


def _text(field: dict[str, str]) -> str | None:
    if "text" in field:
        return field["text"]
    if "bytes" in field:
        return os.fsdecode(base64.b64decode(field["bytes"]))
    return None


def _outside_skipped_dirs(base: str, path: str) -> bool:
    parts = os.path.relpath(path, base).split(os.sep)
    return not any(part in SKIPPED_DIRS for part in parts)
