"""The node daemon end to end: a real gateway on port 0, a real daemon with the real
tools in a tmp workspace, a real GatewayClient driving `tool.invoke`."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from gsv_core.client import Backoff
from gsv_core.client import GatewayClient
from gsv_core.errors import NotFound
from gsv_core.errors import TimedOut
from gsv_core.errors import Unavailable
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from gsv_core.node.daemon import NodeDaemon
from gsv_core.node.daemon import NodeSettings
from gsv_core.node.daemon import default_node_id
from gsv_core.node.logtail import tail_lines
from tests.fakes.tcp_proxy import freezable_proxy
from tests.waiting import until
from tests.wire import credential
from tests.wire import owner_token


@asynccontextmanager
async def running_node(
    url: str, workspace: Path, node_id: str = "n1", **kw: Any
) -> AsyncIterator[NodeDaemon]:
    kw.setdefault("owner_token", owner_token())  # a local node: it enrolls as the owner
    settings = NodeSettings(
        url=url, node_id=node_id, workspace=workspace, backoff=Backoff(base=0.05, cap=0.2), **kw
    )
    daemon = NodeDaemon(settings)
    stop = asyncio.Event()
    task = asyncio.create_task(daemon.run(stop))
    try:
        yield daemon
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


async def node_online(gw: RunningGateway, node_id: str = "n1") -> None:
    await until(lambda: node_id in gw.gateway.nodes.online_ids(), f"node {node_id} online")


async def test_every_tool_works_through_the_gateway(
    gateway: RunningGateway, tmp_path: Path
) -> None:
    """Write, Read, Edit, Glob, Grep, Bash and Process answer tool.invoke with seed shapes."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with (
        running_node(gateway.url, workspace),
        GatewayClient(gateway.url, token=gateway.token) as client,
    ):
        await node_online(gateway)
        tools = {t["name"] for t in (await client.call("tools.list"))["tools"]}
        assert {
            f"n1__{n}" for n in ("Bash", "Process", "Read", "Write", "Edit", "Glob", "Grep")
        } <= tools

        async def invoke(tool: str, **args: Any) -> Any:
            return (await client.call("tool.invoke", {"tool": f"n1__{tool}", "args": args}))[
                "result"
            ]

        written = await invoke("Write", path="notes/a.txt", content="hello\nworld\n")
        assert written == {"path": str(workspace / "notes" / "a.txt"), "bytes": 12}
        assert (await invoke("Read", path="notes/a.txt"))["content"] == "1\thello\n2\tworld"
        assert (await invoke("Edit", path="notes/a.txt", oldString="world", newString="there"))[
            "replacements"
        ] == 1
        globbed = await invoke("Glob", pattern="**/*.txt")
        assert globbed["matches"] == [str(workspace / "notes" / "a.txt")]
        grepped = await invoke("Grep", pattern="the+re")
        assert [(m["line"], m["content"]) for m in grepped["matches"]] == [(2, "there")]
        ran = await invoke("Bash", command="echo $((6 * 7))")
        assert ran["status"] == "completed" and ran["output"].strip() == "42"
        listed = await invoke("Process", action="list")
        assert listed["status"] == "completed"


async def test_tool_errors_reach_the_caller_and_the_node_survives(
    gateway: RunningGateway, tmp_path: Path
) -> None:
    """A failing tool answers with its message; the node keeps serving afterwards."""
    async with (
        running_node(gateway.url, tmp_path),
        GatewayClient(gateway.url, token=gateway.token) as client,
    ):
        await node_online(gateway)
        with pytest.raises(Exception, match="command must not be empty") as failed:
            await client.call("tool.invoke", {"tool": "n1__Bash", "args": {"command": ""}})
        assert getattr(failed.value, "code", None) == 500
        with pytest.raises(NotFound):
            await client.call("tool.invoke", {"tool": "n1__Teleport", "args": {}})
        ok = await client.call("tool.invoke", {"tool": "n1__Bash", "args": {"command": "true"}})
        assert ok["result"]["exitCode"] == 0


async def test_the_node_reconnects_after_a_gateway_restart(tmp_path: Path) -> None:
    """Restarting the gateway on the same port brings the node and its tools back."""
    config = ServerConfig(database=tmp_path / "gsv.db")
    async with serve(config, port=0) as gw:
        port = gw.port
        daemon_cm = running_node(gw.url, tmp_path)
        daemon = await daemon_cm.__aenter__()
        await node_online(gw)
    try:
        await until(lambda: not daemon.connected.is_set(), "node noticing the gateway went away")
        async with serve(config, port=port) as gw2:
            await node_online(gw2)
            async with GatewayClient(gw2.url, token=gw2.token) as client:
                names = [t["name"] for t in (await client.call("tools.list"))["tools"]]
            assert "n1__Read" in names
    finally:
        await daemon_cm.__aexit__(None, None, None)


async def test_a_refused_connect_and_a_bad_token_are_retried_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The daemon logs why it cannot connect and keeps trying until the gateway lets it in."""
    caplog.set_level(logging.WARNING, logger="gsv_core.node.daemon")
    config = ServerConfig(database=tmp_path / "gsv.db")
    async with (
        serve(config, port=0) as gw,
        running_node(gw.url, tmp_path, token="n0.wrong") as daemon,
    ):
        await until(lambda: "Unauthorized" in caplog.text, "a logged Unauthorized")
        assert not daemon.connected.is_set()
        daemon.settings.token = await credential(gw, "node", "n1")
        await node_online(gw)
    async with running_node("ws://127.0.0.1:9/ws", tmp_path):
        await until(lambda: "cannot reach the gateway" in caplog.text, "a logged refused connect")


async def test_a_dead_connection_is_noticed_by_the_keepalive(
    gateway: RunningGateway, tmp_path: Path
) -> None:
    """When the network freezes (no close, no bytes), the node reconnects on its own."""
    async with freezable_proxy(gateway.port) as proxy:
        url = f"ws://127.0.0.1:{proxy.port}/ws"
        async with running_node(url, tmp_path, ping_interval=0.2) as daemon:
            await node_online(gateway)
            proxy.freeze()
            await until(
                lambda: proxy.connections >= 2 and daemon.connected.is_set(),
                "a reconnect after the freeze",
            )


async def test_logs_get_returns_the_nodes_log_tail(gateway: RunningGateway, tmp_path: Path) -> None:
    """logs.get reads the last N lines of the node's log file."""
    log_file = tmp_path / "node.log"
    log_file.write_text("".join(f"line {i}\n" for i in range(10)))
    async with (
        running_node(gateway.url, tmp_path, log_file=log_file),
        GatewayClient(gateway.url, token=gateway.token) as client,
    ):
        await node_online(gateway)
        logs = await client.call("logs.get", {"lines": 3})
    assert logs == {
        "nodeId": "n1",
        "lines": ["line 7", "line 8", "line 9"],
        "count": 3,
        "truncated": True,
    }


async def test_probes_report_which_binaries_exist(gateway: RunningGateway, tmp_path: Path) -> None:
    """node.probe answers true for `sh` and false for a binary that does not exist."""
    async with running_node(gateway.url, tmp_path):
        await node_online(gateway)
        found = await gateway.gateway.nodes.probe_bins("n1", ["sh", "no-such-binary-xyz"], 10)
    assert found == {"sh": True, "no-such-binary-xyz": False}


async def test_background_exec_events_reach_the_gateway(
    gateway: RunningGateway, tmp_path: Path
) -> None:
    """A backgrounded Bash command's end is reported as node.exec.event to its watcher."""
    received: list[dict[str, Any]] = []

    async def sink(completion: dict[str, Any]) -> None:
        received.append(completion)

    async with (
        running_node(gateway.url, tmp_path),
        GatewayClient(gateway.url, token=gateway.token) as client,
    ):
        await node_online(gateway)
        started = await client.call(
            "tool.invoke",
            {"tool": "n1__Bash", "args": {"command": "echo bg-done", "background": True}},
        )
        session_id = started["result"]["sessionId"]
        gateway.gateway.exec_events.watch("n1", session_id, sink, call_id=None)
        await until(lambda: received, "the exec event")
    assert received[0]["event"] == "finished" and "bg-done" in received[0]["outputTail"]


async def test_a_node_that_goes_away_mid_call_fails_it_with_503(
    gateway: RunningGateway, tmp_path: Path
) -> None:
    """Stopping the node during a long Bash call answers the caller with 503 at once."""
    async with GatewayClient(gateway.url, token=gateway.token) as client:
        async with running_node(gateway.url, tmp_path):
            await node_online(gateway)
            call = asyncio.create_task(
                client.call(
                    "tool.invoke", {"tool": "n1__Bash", "args": {"command": "sleep 30"}}, timeout=60
                )
            )
            await until(lambda: gateway.gateway.nodes._calls, "the call in flight")
        with pytest.raises(Unavailable, match="Node disconnected: n1"):
            await call


def test_the_default_node_id_is_safe_for_tool_names() -> None:
    """node-{hostname} without dots or double underscores, at most 48 characters."""
    node_id = default_node_id()
    assert node_id.startswith("node-") and "." not in node_id and "__" not in node_id
    assert len(node_id) <= 48


def test_tail_lines_reads_from_the_end(tmp_path: Path) -> None:
    """tail_lines returns the last N lines and says whether there were more."""
    path = tmp_path / "big.log"
    path.write_text("".join(f"{i}\n" for i in range(100_000)))
    assert tail_lines(path, 2) == (["99998", "99999"], True)
    small = tmp_path / "small.log"
    small.write_text("a\nb\n")
    assert tail_lines(small, 5) == (["a", "b"], False)
    assert tail_lines(small, 2) == (["a", "b"], False)


async def test_a_call_the_gateway_gives_up_on_is_stopped_on_the_node(
    gateway: RunningGateway, tmp_path: Path
) -> None:
    """After the tool timeout the gateway sends tool.cancel and the node kills the command
    (its process group), instead of letting it run on for nobody."""
    pid_file = tmp_path / "pid"
    async with (
        running_node(gateway.url, tmp_path),
        GatewayClient(gateway.url, token=gateway.token) as client,
    ):
        await node_online(gateway)
        # 3 s, not less: the command must start (and write its pid) before the deadline
        await client.call("config.set", {"path": "timeouts.toolMs", "value": 3000})
        command = f"echo $$ > {pid_file}; exec sleep 60"
        with pytest.raises(TimedOut):
            await client.call("tool.invoke", {"tool": "n1__Bash", "args": {"command": command}})
        pid = int(pid_file.read_text())

        def gone() -> bool:
            try:
                os.kill(pid, 0)
                state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
            except OSError:  # gone (possibly reaped between the two looks)
                return True
            return state == "Z"  # killed, not yet reaped

        await until(gone, "the command to be killed")
