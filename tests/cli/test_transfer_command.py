"""`gsv transfer` against a real gateway (thread) and a real node (`gsv node run`)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner
from typer.testing import Result

from gsv_cli.main import app
from gsv_core.gateway.server import RunningGateway
from tests.threaded import owner_env
from tests.threaded import threaded_gateway


@pytest.fixture
def live(tmp_path: Path) -> Iterator[RunningGateway]:
    with threaded_gateway(tmp_path / "data" / "gsv.db") as running:
        yield running


@pytest.fixture
def workspace(live: RunningGateway, tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "ws"
    folder.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gsv_cli", "--url", live.url, "node", "run", "--id", "n1",
         "--workspace", str(folder), "--no-log-stderr"],
        stdout=subprocess.DEVNULL, env=owner_env(live),
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while "n1" not in live.gateway.nodes.online_ids():
        assert time.monotonic() < deadline, "the node did not connect"
        time.sleep(0.05)
    yield folder
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)


def gsv(url: str, *args: str) -> Result:
    return CliRunner().invoke(app, ["--url", url, *args])


def test_transfer_copies_and_reports(live: RunningGateway, workspace: Path) -> None:
    """A node file lands in the workspace; --json prints the result document."""
    (workspace / "a.txt").write_text("hello transfer")
    plain = gsv(live.url, "transfer", "n1:a.txt", "gsv:workspace/in/a.txt")
    assert plain.exit_code == 0, plain.output
    assert plain.stdout.startswith("copied 14 bytes: n1:a.txt -> gsv:workspace/in/a.txt")
    copied = Path(live.gateway.db.path).parent / "workspace" / "agents" / "main" / "in" / "a.txt"
    assert copied.read_text() == "hello transfer"
    back = gsv(live.url, "--json", "transfer", "gsv:workspace/in/a.txt", "n1:b.txt")
    assert json.loads(back.stdout)["bytesTransferred"] == 14
    assert (workspace / "b.txt").read_text() == "hello transfer"


def test_transfer_errors_exit_1(live: RunningGateway, workspace: Path) -> None:
    """A missing source is reported on stderr with exit 1."""
    result = gsv(live.url, "transfer", "n1:missing.txt", "gsv:workspace/x")
    assert result.exit_code == 1 and "missing.txt" in result.stderr
