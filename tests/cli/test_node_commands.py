"""`gsv node`, `gsv tools`, `gsv nodes` and `gsv logs` against a real gateway (in a thread)
and a real node daemon (a `python -m gsv_cli node run` subprocess)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner
from typer.testing import Result

from gsv_cli.main import app
from gsv_core.gateway.server import RunningGateway
from gsv_core.localconfig import load_local_config
from gsv_core.service import background
from tests.threaded import node_subprocess
from tests.threaded import owner_env
from tests.threaded import threaded_gateway
from tests.threaded import wait_for


def gsv(url: str, *args: str) -> Result:
    return CliRunner().invoke(app, ["--url", url, *args])


@pytest.fixture
def live(tmp_path: Path) -> Iterator[RunningGateway]:
    with threaded_gateway(tmp_path / "gw" / "gsv.db") as running:
        yield running


@pytest.fixture
def node_process(live: RunningGateway, tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """`gsv node run --id n1` serving tmp_path/ws, stopped with SIGTERM afterwards."""
    with node_subprocess(live, tmp_path / "ws") as proc:
        yield proc


def test_node_run_serves_tools_that_the_cli_can_call(
    live: RunningGateway, node_process: subprocess.Popen[str], tmp_path: Path
) -> None:
    """`gsv tools list` shows the node's tools; `gsv tools call` writes and reads a file."""
    listed = gsv(live.url, "--json", "tools", "list")
    assert listed.exit_code == 0, listed.output
    names = {tool["name"] for tool in json.loads(listed.stdout)["tools"]}
    assert {"n1__Bash", "n1__Read", "n1__Write"} <= names
    table = gsv(live.url, "tools", "list")
    assert "Read" in table.stdout and "n1" in table.stdout
    wrote = gsv(live.url, "tools", "call", "n1__Write", '{"path": "x.txt", "content": "hi\\n"}')
    assert wrote.exit_code == 0, wrote.output
    assert json.loads(wrote.stdout)["bytes"] == 3
    assert (tmp_path / "ws" / "x.txt").read_text() == "hi\n"
    read = gsv(live.url, "tools", "call", "n1__Read", '{"path": "x.txt"}')
    assert json.loads(read.stdout)["content"] == "1\thi"


def test_tools_call_errors_exit_non_zero(
    live: RunningGateway, node_process: subprocess.Popen[str]
) -> None:
    """A failing tool exits 1 with its message on stderr; bad JSON args are a usage error."""
    failed = gsv(live.url, "tools", "call", "n1__Read", '{"path": "missing.txt"}')
    assert failed.exit_code == 1
    assert "missing.txt" in failed.stderr
    unknown = gsv(live.url, "tools", "call", "n1__Nope")
    assert unknown.exit_code == 1 and "No node provides tool: n1__Nope" in unknown.stderr
    bad = gsv(live.url, "tools", "call", "n1__Read", "{not json")
    assert bad.exit_code == 2
    not_object = gsv(live.url, "tools", "call", "n1__Read", "[1]")
    assert not_object.exit_code == 2


def test_nodes_list_logs_and_forget(
    live: RunningGateway, node_process: subprocess.Popen[str]
) -> None:
    """nodes list shows the node online; logs fetches its log; forget needs --force."""
    listed = gsv(live.url, "--json", "nodes", "list")
    entry = json.loads(listed.stdout)["nodes"][0]
    assert entry["nodeId"] == "n1" and entry["online"] is True
    assert "shell.exec" in entry["hostCapabilities"]
    assert "online" in gsv(live.url, "nodes", "list").stdout
    logs = gsv(live.url, "logs", "--node", "n1", "-n", "50")
    assert logs.exit_code == 0, logs.output
    assert "connected to" in logs.stdout
    refused = gsv(live.url, "nodes", "forget", "n1")
    assert refused.exit_code == 1 and "still connected" in refused.stderr
    assert "use --force" in refused.stderr and "force=true" not in refused.stderr  # CLI words
    forced = gsv(live.url, "nodes", "forget", "n1", "--force")
    assert forced.exit_code == 0 and "forgot node n1" in forced.stdout


def test_node_run_stops_cleanly_on_sigterm(
    live: RunningGateway, node_process: subprocess.Popen[str]
) -> None:
    """SIGTERM ends `gsv node run` with exit 0 and the gateway marks the node offline."""
    node_process.send_signal(signal.SIGTERM)
    assert node_process.wait(timeout=30) == 0
    wait_for(lambda: not live.gateway.nodes.online_ids(), "the node to go offline")


def test_node_run_refuses_a_missing_workspace(live: RunningGateway, tmp_path: Path) -> None:
    """A workspace that is not a directory is a clear error, exit 1."""
    result = gsv(live.url, "node", "run", "--workspace", str(tmp_path / "nope"))
    assert result.exit_code == 1
    assert "is not a directory" in result.stderr


def test_node_start_status_stop_as_a_background_process(
    live: RunningGateway, tmp_path: Path
) -> None:
    """start waits for the connect, status sees it online (exit 0), stop ends it."""
    try:
        started = subprocess.run(
            [sys.executable, "-m", "gsv_cli", "--url", live.url, "node", "start", "--id", "bg",
             "--workspace", str(tmp_path)],
            capture_output=True, text=True, timeout=60, env=owner_env(live),
        )  # fmt: skip
        assert started.returncode == 0, started.stderr
        assert "gsv node bg started" in started.stdout
        assert "warning" not in started.stderr
        status = gsv(live.url, "--json", "node", "status")
        assert status.exit_code == 0, status.output
        assert json.loads(status.stdout)["online"] is True
        stopped = gsv(live.url, "node", "stop")
        assert stopped.exit_code == 0 and "stopped node" in stopped.stdout
        wait_for(lambda: not live.gateway.nodes.online_ids(), "the node to go offline")
        after = gsv(live.url, "node", "status")
        assert after.exit_code == 1 and "not running" in after.stdout
    finally:
        background.stop("node", timeout=10)


def test_node_install_writes_a_unit_and_remembers_the_settings(
    live: RunningGateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """install writes a unit running `gsv node run` with the id/workspace and saves them."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # no systemctl: the unit is written, not started
    result = gsv(live.url, "node", "install", "--id", "desk", "--workspace", str(tmp_path))
    assert result.exit_code == 0, result.output
    unit = Path(os.environ["XDG_CONFIG_HOME"]) / "systemd" / "user" / "gsv-node.service"
    text = unit.read_text()
    assert "node run --id desk --workspace" in text and str(tmp_path) in text
    assert "run by hand" in result.stdout and "gsv node start" in result.stderr
    local = load_local_config()
    assert local.get("node.id") == "desk" and local.get("gateway.url") == live.url
    assert gsv(live.url, "node", "uninstall").exit_code == 0
    assert not unit.exists()


def test_commands_without_a_gateway_exit_3(tmp_path: Path) -> None:
    """Nothing listening: one line saying how to start the gateway, exit 3."""
    result = gsv("ws://127.0.0.1:9/ws", "tools", "list")
    assert result.exit_code == 3
    (line,) = result.stderr.strip().splitlines()
    assert "cannot reach the gateway at ws://127.0.0.1:9/ws" in line and "gsv gateway run" in line
