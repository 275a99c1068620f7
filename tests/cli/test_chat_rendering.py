"""How `gsv chat "message"` shows the reply, in a real subprocess against a real gateway
(thread) with the scripted model: piped, the model's Markdown byte for byte; on a
terminal (a pty), rendered by rich's Markdown, with nothing in the text taken as rich
markup or obeyed as a terminal control."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys

from gsv_core.gateway.server import RunningGateway
from tests.fakes.provider import FakeProvider
from tests.hostile import HOSTILE
from tests.hostile import RAW_CONTROL
from tests.threaded import owner_env

REPLY = (
    "# Plan\n\n",
    "Some **bold**, `code` and [red]markup[/red] :smile:.\n\n",
    "- [a link](https://example.com/x)\n",
)
# what rich itself writes on a terminal: SGR colours, cursor moves, line erases
RICH_CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def gsv_chat(live: RunningGateway, **streams: int) -> subprocess.Popen[bytes]:
    env = {**owner_env(live), "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "60"}
    env.pop("NO_COLOR", None)
    return subprocess.Popen(
        [sys.executable, "-m", "gsv_cli", "--url", live.url, "chat", "plan it"],
        stdin=subprocess.DEVNULL, env=env, **streams,  # type: ignore[arg-type]
    )  # fmt: skip


def on_a_terminal(live: RunningGateway) -> tuple[int, str]:
    """The command's exit code and everything it wrote to its terminal."""
    master, slave = pty.openpty()
    proc = gsv_chat(live, stdout=slave, stderr=subprocess.DEVNULL)
    os.close(slave)  # the child holds it: reading ends (EIO) when the child exits
    written = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        written += chunk
    os.close(master)
    return proc.wait(timeout=60), written.decode("utf-8")


def test_piped_the_reply_is_the_models_markdown_byte_for_byte(
    live: RunningGateway, fake: FakeProvider
) -> None:
    """No rendering, no escape sequences: a script gets exactly the text."""
    fake.enqueue(*REPLY)
    proc = gsv_chat(live, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert stdout == "".join(REPLY).encode()


def test_on_a_terminal_the_reply_is_rendered_as_markdown(
    live: RunningGateway, fake: FakeProvider
) -> None:
    """Heading and emphasis are rendered (no `#`, no `**`, bold is bold); rich markup in
    the text stays literal; a link shows its address, not a hidden hyperlink."""
    fake.enqueue(*REPLY)
    code, written = on_a_terminal(live)
    assert code == 0, written
    shown = RICH_CSI.sub("", written)
    assert "Plan" in shown and "# Plan" not in shown
    assert "bold" in shown and "**" not in shown and "\x1b[1m" in written
    assert "[red]markup[/red] :smile:." in shown
    assert "a link (https://example.com/x)" in shown
    assert "\x1b]8;" not in written  # no OSC 8 hyperlink


def test_on_a_terminal_hostile_text_is_shown_not_obeyed(
    live: RunningGateway, fake: FakeProvider
) -> None:
    """Every hostile string of tests/hostile.py, one per list item, appears as a person
    must see it, and no control character of the reply reaches the terminal."""
    fake.enqueue(*(f"- {hostile.written}\n" for hostile in HOSTILE))
    code, written = on_a_terminal(live)
    assert code == 0, written
    shown = RICH_CSI.sub("", written).replace("\r", "")
    for hostile in HOSTILE:
        assert hostile.shown in shown, hostile.name
    assert not RAW_CONTROL.findall(shown)
