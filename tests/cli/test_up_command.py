"""`gsv up` / `gsv down` end to end: real subprocesses (`python -m gsv_cli`) with GSV_HOME
in tmp_path, a real background gateway on a free port and a real node. The chat itself is
skipped with the hidden `--no-chat` flag (tests/tui covers it)."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gsv_cli.commands.gateway import probe_health
from gsv_core.client import GatewayClient
from gsv_core.node.daemon import default_node_id
from gsv_core.paths import resolve_paths
from gsv_core.service import background
from tests.wire import owner_token


def gsv_process(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gsv_cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def url() -> Iterator[str]:
    """The URL of a free local port; whatever the test started there is stopped after."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    yield f"ws://127.0.0.1:{port}/ws"
    background.stop("node", timeout=10)
    background.stop("gateway", timeout=10)


def online_nodes(url: str) -> list[str]:
    async def ask() -> list[str]:
        async with GatewayClient(url, token=owner_token()) as client:
            listed = await client.call("nodes.list")
        return [n["nodeId"] for n in listed["nodes"] if n["online"]]

    return asyncio.run(ask())


def up_state() -> dict[str, object]:
    return json.loads((resolve_paths().run_dir / "up.json").read_text())


def test_up_starts_a_gateway_and_a_node_and_down_stops_both(url: str, tmp_path: Path) -> None:
    """From nothing: up starts the gateway and a node serving --workspace, says how to stop
    them and records them; down stops exactly those."""
    workspace = tmp_path / "project"
    workspace.mkdir()
    done = gsv_process("--url", url, "up", "--no-chat", "--workspace", str(workspace))
    assert done.returncode == 0, done.stderr
    assert "gsv gateway started" in done.stdout and "gsv node" in done.stdout
    assert "`gsv down` stops the gateway and the node that gsv up started" in done.stdout
    assert probe_health(url) == {"status": "healthy"}
    assert default_node_id() in online_nodes(url)
    recorded = up_state()
    assert set(recorded) == {"gateway", "node"}
    assert recorded["node"]["workspace"] == str(workspace.resolve())  # type: ignore[index]

    stopped = gsv_process("down")
    assert stopped.returncode == 0, stopped.stderr
    assert "stopped node" in stopped.stdout and "stopped gateway" in stopped.stdout
    assert probe_health(url) is None
    assert background.running_pid("gateway") is None and background.running_pid("node") is None
    again = gsv_process("down")
    assert again.returncode == 0 and "nothing to stop" in again.stdout


def test_up_reuses_what_already_runs(url: str, tmp_path: Path) -> None:
    """A second up starts nothing new; without a terminal it says how to open the chat."""
    first = gsv_process("--url", url, "up", "--no-chat", "--workspace", str(tmp_path))
    assert first.returncode == 0, first.stderr
    pids = {name: background.running_pid(name) for name in ("gateway", "node")}
    second = gsv_process("--url", url, "up", "--workspace", str(tmp_path))
    assert second.returncode == 0, second.stderr
    assert f"gateway: already running at {url}" in second.stdout
    assert f"node: {default_node_id()} already connected" in second.stdout
    assert "not a terminal" in second.stderr
    assert {name: background.running_pid(name) for name in pids} == pids


def test_down_leaves_a_gateway_it_did_not_start(url: str, tmp_path: Path) -> None:
    """A gateway started with `gsv gateway start` is reused by up and left running by down."""
    port = url.split(":")[2].split("/")[0]
    started = gsv_process("gateway", "start", "--port", port)
    assert started.returncode == 0, started.stderr
    done = gsv_process("--url", url, "up", "--no-chat", "--workspace", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "gateway: already running" in done.stdout
    assert set(up_state()) == {"node"}
    stopped = gsv_process("down")
    assert "stopped node" in stopped.stdout and "gateway" not in stopped.stdout
    assert probe_health(url) == {"status": "healthy"}


def test_up_refuses_to_start_a_remote_gateway() -> None:
    """A gateway URL on another host that does not answer: exit 1, nothing started."""
    done = gsv_process("--url", "ws://192.0.2.1:9/ws", "up", "--no-chat", timeout=60)
    assert done.returncode == 1
    assert "only starts a local one" in done.stderr
    assert background.running_pid("gateway") is None


def test_up_refuses_a_workspace_that_is_not_a_directory(tmp_path: Path) -> None:
    """--workspace must be a directory; nothing is started otherwise."""
    done = gsv_process("up", "--no-chat", "--workspace", str(tmp_path / "missing"))
    assert done.returncode == 1 and "is not a directory" in done.stderr
    assert background.running_pid("gateway") is None


def test_up_from_the_home_directory_starts_nothing_and_says_what_to_do() -> None:
    """The node would serve the home directory (login profiles, ssh keys): refused
    before the gateway starts, with how to choose a workspace."""
    done = gsv_process("up", "--no-chat", "--workspace", str(Path.home()))
    assert done.returncode == 1 and "is your home directory" in done.stderr
    assert "gsv up --workspace DIR" in " ".join(done.stderr.split())
    assert background.running_pid("gateway") is None


def test_up_beside_another_homes_gateway_says_so_and_port_starts_this_homes(
    url: str, tmp_path: Path
) -> None:
    """Issue 40.3: a gateway that refuses this home's token answers where up would start
    one: up says whose it is and what to do (not "already running" then "Unauthorized");
    `gsv up --port N` starts this home's there and remembers it for later commands."""
    workspace = tmp_path / "project"
    workspace.mkdir()
    first = gsv_process("--url", url, "up", "--no-chat", "--workspace", str(workspace))
    assert first.returncode == 0, first.stderr
    stranger = gsv_process("--url", url, "--token", "not-this-homes-token", "up", "--no-chat",
                           "--workspace", str(workspace))  # fmt: skip
    assert stranger.returncode == 1 and "already running" not in stranger.stdout
    said = " ".join(stranger.stderr.split())
    assert "it is not this home's" in said and "gsv up --port 8788" in said
    refused = gsv_process("--url", url, "--token", "not-this-homes-token", "status")
    assert "answers, but refused this CLI's token" in refused.stdout
    assert "start one here" not in refused.stderr and "--token" in refused.stderr
    gsv_process("down")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    moved = gsv_process("up", "--port", str(port), "--no-chat", "--workspace", str(workspace))
    assert moved.returncode == 0, moved.stderr
    assert probe_health(f"ws://127.0.0.1:{port}/ws") == {"status": "healthy"}
    later = gsv_process("status")  # no --url: the remembered one
    assert f"ws://127.0.0.1:{port}/ws" in later.stdout and later.returncode == 0
    gsv_process("down")


def test_a_url_without_a_scheme_gets_the_ws_url_it_means() -> None:
    bare = gsv_process("--url", "127.0.0.1:8787", "status")
    assert bare.returncode == 1 and "did you mean ws://127.0.0.1:8787/ws" in bare.stderr


def test_down_says_what_it_leaves_when_the_gateway_was_restarted_since_up(
    url: str, tmp_path: Path
) -> None:
    """Issue 40.4: after `gsv gateway start` replaced up's gateway, down stops up's node,
    and says the gateway it leaves running, why, and how to stop it (not a silent exit)."""
    workspace = tmp_path / "project"
    workspace.mkdir()
    assert (
        gsv_process("--url", url, "up", "--no-chat", "--workspace", str(workspace)).returncode == 0
    )
    assert gsv_process("--url", url, "gateway", "stop").returncode == 0
    port = url.split(":")[2].split("/")[0]
    restarted = gsv_process("--url", url, "gateway", "start", "--port", port)
    assert restarted.returncode == 0, restarted.stderr
    down = gsv_process("down")
    said = " ".join(down.stderr.split())
    assert "left the gateway running" in said and "gsv gateway stop" in said
    assert probe_health(url) == {"status": "healthy"}
