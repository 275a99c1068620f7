"""Work nobody waits for stops, and a node that stops answering is dropped: a real gateway
(in a thread), a real `gsv node run` subprocess, the `gsv` CLI as the caller.

The gateway here pings every 0.3 s (5 s in production, docs/protocol.md): the same
path that drops a frozen node within 15 s runs in about a second."""

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
from tests.threaded import node_subprocess
from tests.threaded import owner_env
from tests.threaded import threaded_gateway
from tests.threaded import wait_for

# a frozen node is noticed within seconds; a live one under load still answers in time
# (its pong crosses a busy machine and a gateway thread sharing the GIL with the CLI)
QUICK_PINGS = {"ping_interval": 0.3, "ping_timeout": 5.0, "close_timeout": 0.3}


def gsv(url: str, *args: str) -> Result:
    return CliRunner().invoke(app, ["--url", url, *args])


def node_tools(live: RunningGateway, node_id: str = "n1") -> set[str]:
    """The names `gsv tools list` offers from this node."""
    listed = gsv(live.url, "--json", "tools", "list")
    assert listed.exit_code == 0, listed.output
    names = {tool["name"] for tool in json.loads(listed.stdout)["tools"]}
    return {name for name in names if name.startswith(f"{node_id}__")}


def gone(pid: int) -> bool:
    """True once `pid` has ended (a zombie not yet reaped counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return True
    return state == "Z"


@pytest.fixture
def live(tmp_path: Path) -> Iterator[RunningGateway]:
    with threaded_gateway(tmp_path / "gw" / "gsv.db", **QUICK_PINGS) as running:
        yield running


@pytest.fixture
def node(live: RunningGateway, tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    with node_subprocess(live, tmp_path / "ws") as proc:
        yield proc


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_a_call_the_gateway_gives_up_on_is_killed_on_the_node(
    live: RunningGateway, node: subprocess.Popen[str], tmp_path: Path
) -> None:
    """The caller gets "timed out" after timeouts.toolMs, and the node process kills the
    command it was running (tool.cancel), instead of letting it sleep on for nobody.
    toolMs is 3 s, not less: the command must start (and write its pid) within it."""
    assert gsv(live.url, "config", "set", "timeouts.toolMs", "3000").exit_code == 0
    pid_file = tmp_path / "ws" / "pid"
    command = json.dumps({"command": f"echo $$ > {pid_file}; exec sleep 60"})
    called = gsv(live.url, "tools", "call", "n1__Bash", command)
    assert called.exit_code == 1 and "timed out" in called.stderr.lower()
    pid = int(pid_file.read_text())
    wait_for(lambda: gone(pid), "the node to kill the command")
    assert node.poll() is None  # the node itself serves on
    again = gsv(live.url, "tools", "call", "n1__Bash", '{"command": "echo still here"}')
    assert again.exit_code == 0 and "still here" in again.stdout


def test_a_frozen_node_is_dropped_and_its_pending_call_fails(
    live: RunningGateway, node: subprocess.Popen[str], tmp_path: Path
) -> None:
    """SIGSTOP the node mid-call: the keepalive notices, the caller's call fails with
    "Node disconnected" and the node's tools leave tools.list; once continued, the node
    reconnects and its tools come back."""
    assert "n1__Bash" in node_tools(live)
    started = tmp_path / "ws" / "started"
    args = json.dumps({"command": f"touch {started}; exec sleep 30"})
    caller = subprocess.Popen(
        [sys.executable, "-m", "gsv_cli", "--url", live.url, "tools", "call", "n1__Bash", args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=owner_env(live),
    )  # fmt: skip
    try:
        wait_for(started.exists, "the command to start")
        os.kill(node.pid, signal.SIGSTOP)
        _, stderr = caller.communicate(timeout=30)
        assert caller.returncode == 1 and "Node disconnected: n1" in stderr
        assert "n1" not in live.gateway.nodes.online_ids()
        assert node_tools(live) == set()
    finally:
        if caller.poll() is None:
            caller.kill()
            caller.wait()
        os.kill(node.pid, signal.SIGCONT)
    wait_for(lambda: "n1" in live.gateway.nodes.online_ids(), "the node to reconnect")
    assert "n1__Bash" in node_tools(live)


def test_the_default_keepalive_drops_a_silent_peer_within_15_seconds(tmp_path: Path) -> None:
    """The production settings keep the promise the test above checks with quick pings:
    a ping every interval, a pong awaited for the timeout, then a bounded close."""
    from gsv_core.gateway.server import ServerConfig

    config = ServerConfig(database=tmp_path / "gsv.db")
    assert config.ping_interval is not None and config.ping_timeout is not None
    assert config.ping_interval + config.ping_timeout + config.close_timeout <= 15
