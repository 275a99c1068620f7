"""The gateway's other requests to and about nodes: logs, probes, forget, the inventory
across restarts and exec events, driven by raw node sockets speaking the protocol."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from gsv_core.errors import Unavailable
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from gsv_core.protocol.schemas.nodes import NodeExecEventParams
from tests.gateway.test_nodes import client_socket
from tests.gateway.test_nodes import next_event
from tests.gateway.test_nodes import node_socket
from tests.gateway.test_nodes import send_req
from tests.waiting import until
from tests.wire import request


async def test_logs_get_targets_the_only_node_and_clamps_lines(gateway: RunningGateway) -> None:
    """Without nodeId the single node is asked; lines are clamped to 5000."""
    node = await node_socket(gateway, "n1")
    client = await client_socket(gateway)
    try:
        await send_req(client, "logs.get", {"lines": 99999}, "logs")
        ask = await next_event(node, "logs.get")
        assert ask["lines"] == 5000
        await request(
            node, "logs.result", {"callId": ask["callId"], "lines": ["a", "b"], "truncated": True}
        )
        reply = json.loads(await client.recv())
        assert reply["payload"] == {
            "nodeId": "n1",
            "lines": ["a", "b"],
            "count": 2,
            "truncated": True,
        }
    finally:
        await node.close()
        await client.close()


async def test_logs_get_errors(gateway: RunningGateway) -> None:
    """No node -> 503; several without nodeId -> 400; unknown node -> 503; lines < 1 -> 400."""
    client = await client_socket(gateway)
    try:
        assert (await request(client, "logs.get", {}))["error"] == {
            "code": 503,
            "message": "No nodes connected",
            "retryable": True,
        }
        a, b = await node_socket(gateway, "a"), await node_socket(gateway, "b")
        several = await request(client, "logs.get", {})
        assert several["error"] == {
            "code": 400,
            "message": "nodeId required when multiple nodes are connected",
        }
        gone = await request(client, "logs.get", {"nodeId": "zz"})
        assert gone["error"]["message"] == "Node not connected: zz"
        zero = await request(client, "logs.get", {"nodeId": "a", "lines": 0})
        assert zero["error"]["code"] == 400
        await a.close()
        await b.close()
    finally:
        await client.close()


async def test_node_probe_round_trip(gateway: RunningGateway) -> None:
    """probe_bins sends node.probe and returns the node's answer for exactly the asked bins."""
    node = await node_socket(gateway, "n1")
    try:
        probe = asyncio.create_task(gateway.gateway.nodes.probe_bins("n1", ["git", "nope"], 5))
        ask = await next_event(node, "node.probe")
        assert ask["kind"] == "bins" and ask["bins"] == ["git", "nope"] and ask["timeoutMs"] == 5000
        ack = await request(
            node,
            "node.probe.result",
            {"probeId": ask["probeId"], "ok": True, "bins": {"git": True, "extra": True}},
        )
        assert ack["payload"] == {"ok": True}
        assert await probe == {"git": True, "nope": False}
        with pytest.raises(Unavailable):
            await gateway.gateway.nodes.probe_bins("ghost", ["git"], 5)
    finally:
        await node.close()


async def test_node_forget_refuses_a_connected_node_unless_forced(gateway: RunningGateway) -> None:
    """409 while connected; force closes the socket and removes it from the inventory."""
    node = await node_socket(gateway, "n1")
    client = await client_socket(gateway)
    try:
        refused = await request(client, "node.forget", {"nodeId": " n1 "})
        assert refused["error"]["code"] == 409
        forced = await request(client, "node.forget", {"nodeId": "n1", "force": True})
        assert forced["payload"] == {
            "ok": True,
            "nodeId": "n1",
            "removed": True,
            "disconnected": True,
        }
        await node.wait_closed()
        assert node.close_code == 1000 and node.close_reason == "Forgotten from node registry"
        listed = await request(client, "nodes.list")
        assert listed["payload"] == {"nodes": [], "count": 0}
        assert (await request(client, "node.forget", {"nodeId": "   "}))["error"]["code"] == 400
    finally:
        await client.close()


async def test_nodes_list_keeps_offline_nodes_across_a_restart(tmp_path: Path) -> None:
    """A node that disconnected is listed offline with its tools, also after a restart."""
    config = ServerConfig(database=tmp_path / "gsv.db")
    async with serve(config, port=0) as gw:
        node = await node_socket(gw, "n1")
        await node.close()
        await until(lambda: not gw.gateway.nodes.online_ids(), "the gateway to notice the close")
    async with serve(config, port=0) as gw:
        client = await client_socket(gw)
        listed = (await request(client, "nodes.list"))["payload"]
        await client.close()
    assert listed["count"] == 1
    entry = listed["nodes"][0]
    assert entry["nodeId"] == "n1" and entry["online"] is False
    assert entry["tools"] == ["Read"] and entry["hostCapabilities"] == ["shell.exec"]
    assert entry["lastDisconnectedAt"] >= entry["lastConnectedAt"] >= entry["firstSeenAt"]


async def test_exec_events_reach_the_watching_session_once(gateway: RunningGateway) -> None:
    """An unwatched event is dropped; a watched terminal event is delivered exactly once."""
    received: list[dict[str, Any]] = []

    async def sink(completion: dict[str, Any]) -> None:
        received.append(completion)

    node = await node_socket(gateway, "n1")
    try:
        event = {
            "eventId": "e1",
            "sessionId": "s1",
            "event": "finished",
            "exitCode": 0,
            "outputTail": "done\n",
        }
        unwatched = await request(node, "node.exec.event", event)
        assert unwatched["payload"] == {"ok": True, "dropped": True}
        gateway.gateway.exec_events.watch("n1", "s1", sink, call_id="call-1")
        started = await request(
            node, "node.exec.event", {**event, "eventId": "e0", "event": "started"}
        )
        assert started["payload"] == {"ok": True}
        for _ in range(2):
            assert (await request(node, "node.exec.event", event))["payload"] == {"ok": True}
        bogus = await request(
            node, "node.exec.event", {**event, "eventId": "e2", "event": "exploded"}
        )
        assert bogus["payload"] == {"ok": True, "dropped": True}
        missing = await request(node, "node.exec.event", {"event": "finished"})
        assert missing["error"]["code"] == 400
    finally:
        await node.close()
    assert len(received) == 1
    assert received[0]["nodeId"] == "n1" and received[0]["callId"] == "call-1"
    assert received[0]["outputTail"] == "done" and received[0]["exitCode"] == 0


def test_exec_event_params_accept_null_exit_codes() -> None:
    """exitCode may be null (killed by a signal)."""
    params = NodeExecEventParams.model_validate(
        {"eventId": "e1", "sessionId": "s", "event": "failed", "exitCode": None,
         "signal": "SIGKILL"}
    )  # fmt: skip
    assert params.exitCode is None and params.signal == "SIGKILL"


async def test_an_exec_event_without_its_event_id_is_refused(gateway: RunningGateway) -> None:
    """eventId is required (it is the key events are de-duplicated by)."""
    node = await node_socket(gateway, "n1")
    try:
        reply = await request(node, "node.exec.event", {"sessionId": "s", "event": "finished"})
        assert reply["error"]["code"] == 400 and "eventId" in reply["error"]["message"]
    finally:
        await node.close()
