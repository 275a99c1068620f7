"""Smoke test of the real thing: `gsv chat` in a real terminal (tmux, 80x24) against a real
gateway with a scripted model: it connects, a message gets its streamed reply, a tool call
shows, and Ctrl+Q quits with exit 0. Skipped when tmux is missing (.ci/run installs it)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from gsv_core.gateway.server import RunningGateway
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.threaded import threaded_gateway

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)"
)

WAIT = 30.0
ISOLATION = ("GSV_", "XDG_", "HOME", "PYTHON_KEYRING_BACKEND")


class Tmux:
    """One private tmux server (its own socket) running one command in an 80x24 pane."""

    def __init__(self, socket_name: str) -> None:
        self.socket_name = socket_name

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-L", self.socket_name, "-f", os.devnull, *args],
            capture_output=True,
            text=True,
            timeout=30,
        )

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "chat").stdout

    def wait_for(self, text: str) -> str:
        """Poll the screen until `text` shows (the terminal gives no event to wait on)."""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never showed; the screen:\n{self.screen()}")


@pytest.fixture
def fake() -> FakeProvider:
    return FakeProvider()


@pytest.fixture
def live(tmp_path: Path, fake: FakeProvider) -> Iterator[RunningGateway]:
    with threaded_gateway(tmp_path / "data" / "gsv.db", provider_factory=fake.factory) as running:
        yield running


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    terminal = Tmux(f"gsv-test-{uuid.uuid4().hex[:8]}")
    yield terminal
    terminal.run("kill-server")


def test_gsv_chat_runs_in_a_real_terminal(
    tmux: Tmux, live: RunningGateway, fake: FakeProvider, tmp_path: Path
) -> None:
    """The real `gsv chat` connects, streams a reply with a tool call, and quits on Ctrl+Q."""
    fake.enqueue("Checking the model.", call("gsv__ConfigGet", {"path": "model.id"}))
    fake.enqueue("Smoke test passed.")
    exit_file = tmp_path / "exit-code"
    # the test's isolated GSV_HOME, HOME and XDG dirs, whatever the tmux server inherited
    isolated = [f"{k}={v}" for k, v in os.environ.items() if k.startswith(ISOLATION)]
    isolated.append(f"GSV_TOKEN={live.token}")  # the in-process keyring is not shared
    chat = shlex.join(
        ["env", *isolated, sys.executable, "-m", "gsv_cli", "--url", live.url, "chat"]
    )
    command = f"{chat}; echo $? > {shlex.quote(str(exit_file))}"
    started = tmux.run("new-session", "-d", "-s", "chat", "-x", "80", "-y", "24", command)
    assert started.returncode == 0, started.stderr

    tmux.wait_for("● connected")
    tmux.run("send-keys", "-t", "chat", "-l", "is it working?")
    tmux.run("send-keys", "-t", "chat", "Enter")
    screen = tmux.wait_for("Smoke test passed.")
    assert "is it working?" in screen
    assert "✓ ConfigGet · gateway · model.id" in screen

    tmux.run("send-keys", "-t", "chat", "C-q")
    deadline = time.monotonic() + WAIT
    while not exit_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert exit_file.read_text().strip() == "0"
