"""gsv_cli.safe_text and the output functions built on it: hostile text is shown as
written, controls as visible stand-ins, and nothing fails to encode."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from gsv_cli import output
from gsv_cli.logsetup import configure_logging
from gsv_cli.safe_text import escape_json
from gsv_cli.safe_text import neutralise
from gsv_cli.safe_text import plain_text
from tests.hostile import HOSTILE
from tests.hostile import RAW_CONTROL
from tests.hostile import SURROGATE
from tests.hostile import Hostile

EVERY = [*HOSTILE, SURROGATE]
MORE = [
    Hostile("crlf", "one\r\ntwo", "one\ntwo"),
    Hostile("nul-and-del", "a\x00b\x7fc", "a␀b␡c"),
    Hostile("dcs", "\x1bP1$r\x1b\\", "␛P1$r␛\\"),
    Hostile("backspace-and-bell", "ok\x08\x08no\x07", "ok␈␈no␇"),
    Hostile("c1-osc-and-st", "\x9d0;title\x9c", "\\x9d0;title\\x9c"),
    # a right-to-left override makes the rest read backwards: "txt.exe" for "exe.txt"
    Hostile("bidi-override", "report\u202etxt.exe", "report\\u202etxt.exe"),
    Hostile("bidi-isolates", "a\u2067b\u2069c\u200f", "a\\u2067b\\u2069c\\u200f"),
]


@pytest.mark.parametrize("hostile", [*EVERY, *MORE], ids=lambda h: h.name)
def test_neutralise_shows_each_control_as_a_visible_stand_in(hostile: Hostile) -> None:
    """ESC, BEL, CR, C1 codes and lone surrogates become printable stand-ins."""
    shown = neutralise(hostile.written)
    assert shown == hostile.shown
    assert not RAW_CONTROL.search(shown)
    shown.encode("utf-8")  # strict: nothing left that cannot be written


def test_ordinary_text_is_left_as_it_is() -> None:
    """Tabs, line breaks, accents, CJK, emoji and right-to-left text are not touched."""
    text = "héllo\t世界 🙂\nשלום [ok] :smile: \\x1b"
    assert neutralise(text) == text


@pytest.mark.parametrize("hostile", EVERY, ids=lambda h: h.name)
def test_plain_text_renders_literally_through_rich(hostile: Hostile) -> None:
    """A rich Text from plain_text prints exactly the shown form on a strict UTF-8 stream."""
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="utf-8", errors="strict", write_through=True)
    console = Console(file=stream, width=200, color_system=None, highlight=False)
    console.print(plain_text(hostile.written), soft_wrap=True)
    assert raw.getvalue().decode("utf-8") == hostile.shown + "\n"


def test_escape_json_keeps_the_value_and_leaves_no_raw_control() -> None:
    """C1, DEL and lone surrogates become \\u escapes: the same JSON value, printable."""
    data = {"texts": [hostile.written for hostile in EVERY], "del": "\x7f"}
    dumped = escape_json(json.dumps(data, ensure_ascii=False))
    assert json.loads(dumped) == data
    assert not RAW_CONTROL.search(dumped)
    assert "\\u009b" in dumped and "\\ud800" in dumped and "[/]" in dumped


@pytest.mark.parametrize("hostile", EVERY, ids=lambda h: h.name)
def test_every_output_function_shows_hostile_text_as_written(
    hostile: Hostile, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tables, plain lines, errors, hints and JSON: no crash on pytest's strict UTF-8
    capture, the shown form on screen, JSON that reads back the same."""
    output.print_table(["column"], [[hostile.written]])
    output.write_text(hostile.written + "\n")
    output.print_error(hostile.written)
    output.print_hint(hostile.written)
    output.print_json({"value": hostile.written})
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[1].rstrip() == hostile.shown and lines[2] == hostile.shown
    assert json.loads("\n".join(lines[3:])) == {"value": hostile.written}
    assert err.splitlines() == [f"error: {hostile.shown}", hostile.shown]
    assert not RAW_CONTROL.search(out + err)


def test_file_contents_stay_exact_when_redirected(capsys: pytest.CaptureFixture[str]) -> None:
    """`gsv workspace cat x > copy` keeps the file's bytes (only surrogates are escaped)."""
    output.write_content("\x1b[31mred\x07\r\n" + SURROGATE.written)
    assert capsys.readouterr().out == "\x1b[31mred\x07\r\n" + SURROGATE.shown


def test_file_contents_are_neutralised_on_a_terminal() -> None:
    """On a terminal the same contents show their escape sequences instead of obeying them."""
    main, child = os.openpty()
    script = "from gsv_cli.output import write_content; write_content('\\x1b]52;c;ZXZpbA==\\x07')"
    try:
        subprocess.run([sys.executable, "-c", script], stdout=child, check=True, timeout=60)
        shown = os.read(main, 4096).decode("utf-8")
    finally:
        os.close(main)
        os.close(child)
    assert shown == "␛]52;c;ZXZpbA==␇"


def test_log_lines_show_controls_instead_of_obeying_them(tmp_path: Path) -> None:
    """A logged sender name with escapes (and a lone surrogate) is written shown, not raw."""
    log_file = tmp_path / "gateway.log"
    configure_logging(log_file, stderr=False)
    try:
        logging.getLogger("gsv.test").warning("pairing request from %s", "\x1b[2J" + "\ud800")
    finally:
        configure_logging(None, stderr=False)  # closes the file handler
    line = log_file.read_text(encoding="utf-8")
    assert line.rstrip().endswith("pairing request from ␛[2J\\ud800")
