"""Node routing on the gateway: runtime validation and tool calls, driven by raw node
sockets speaking the protocol (logs, probes, forget, inventory and exec events:
test_node_requests.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection

from gsv_core.approval.binding import verify
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from tests.waiting import until
from tests.wire import connect_params
from tests.wire import credential
from tests.wire import handshake
from tests.wire import node_runtime
from tests.wire import open_raw
from tests.wire import request

READ = {"name": "Read", "description": "read a file", "inputSchema": {"type": "object"}}


async def next_event(ws: ClientConnection, name: str) -> dict[str, Any]:
    """The next event called `name` (responses and other events are skipped)."""
    while True:
        frame = json.loads(await ws.recv())
        if frame.get("type") == "evt" and frame["event"] == name:
            payload: dict[str, Any] = frame["payload"]
            return payload


async def send_req(ws: ClientConnection, method: str, params: Any, frame_id: str) -> None:
    await ws.send(json.dumps({"type": "req", "id": frame_id, "method": method, "params": params}))


async def node_socket(
    gateway: RunningGateway, node_id: str, tools: list[dict[str, Any]] | None = None
) -> ClientConnection:
    ws = await open_raw(gateway.url)
    await handshake(ws, mode="node", client_id=node_id, tools=tools or [READ])
    return ws


async def client_socket(gateway: RunningGateway) -> ClientConnection:
    ws = await open_raw(gateway.url)
    await handshake(ws)
    return ws


@pytest.mark.parametrize(
    ("runtime", "reason"),
    [
        (None, "nodeRuntime for n1 is required"),
        (
            {"hostCapabilities": ["teleport"], "toolCapabilities": {"Read": ["teleport"]}},
            "unknown capability id 'teleport'",
        ),
        (
            {"hostCapabilities": ["filesystem.read"], "toolCapabilities": {}},
            "tool Read has no toolCapabilities entry",
        ),
        (
            {
                "hostCapabilities": ["text.search"],
                "toolCapabilities": {"Read": ["filesystem.read"]},
            },
            "which hostCapabilities does not list",
        ),
        (
            {
                "hostCapabilities": ["filesystem.read"],
                "toolCapabilities": {"Read": ["filesystem.read"], "Ghost": ["filesystem.read"]},
            },
            "unknown tools: Ghost",
        ),
        (
            {"hostCapabilities": [], "toolCapabilities": {"Read": []}},
            "hostCapabilities must not be empty",
        ),
        (
            {"hostCapabilities": "shell.exec", "toolCapabilities": {}},
            "Invalid nodeRuntime: hostCapabilities",
        ),
    ],
)
async def test_bad_node_runtime_is_refused_with_103(
    gateway: RunningGateway, runtime: Any, reason: str
) -> None:
    """Each runtime defect (docs/protocol.md#connect) gets 103 with a reason; the node is not registered."""
    async with await open_raw(gateway.url) as ws:
        params = connect_params(mode="node", client_id="n1", tools=[READ], nodeRuntime=runtime)
        if runtime is None:
            del params["nodeRuntime"]
        reply = await request(ws, "connect", params)
    assert reply["error"]["code"] == 103
    assert reason in reply["error"]["message"]
    assert gateway.gateway.nodes.online_ids() == []


@pytest.mark.parametrize(
    ("node_id", "tool", "reason"),
    [
        ("my__node", "Read", "Invalid node id"),
        ("laptop.local", "Read", "Invalid node id"),
        ("n1", "Re ad", "Invalid tool name"),
        ("gsv", "Read", "reserved"),  # gsv__Read would read as the gateway's own tool
        ("mcp_toy", "echo", "reserved"),  # mcp_toy__echo would go to an MCP server
        ("MCP_toy", "echo", "reserved"),
    ],
)
async def test_ids_that_would_break_tool_namespacing_are_refused(
    gateway: RunningGateway, node_id: str, tool: str, reason: str
) -> None:
    """Node ids with `__` or dots and odd tool names cannot form `{nodeId}__{tool}` names."""
    async with await open_raw(gateway.url) as ws:
        params = connect_params(mode="node", client_id=node_id, tools=[{**READ, "name": tool}])
        reply = await request(ws, "connect", params)
    assert reply["error"]["code"] == 103
    assert reason in reply["error"]["message"]


async def test_a_minimal_runtime_is_accepted_and_normalised(gateway: RunningGateway) -> None:
    """Capabilities are trimmed, deduplicated and sorted; env names only are kept."""
    runtime = {
        "hostCapabilities": [" shell.exec", "filesystem.read", "shell.exec"],
        "toolCapabilities": {"Read": ["filesystem.read"]},
        "hostEnv": ["HOME", "PATH", " "],
        "hostOs": "linux",
    }
    async with await open_raw(gateway.url) as ws:
        await handshake(ws, mode="node", client_id="n1", tools=[READ], nodeRuntime=runtime)
        node = gateway.gateway.nodes.online("n1")
        assert node is not None
        assert node.runtime.hostCapabilities == ["filesystem.read", "shell.exec"]
        assert node.runtime.hostEnv == ["HOME", "PATH"]


async def test_tool_invoke_relays_the_call_and_the_result_unchanged(
    gateway: RunningGateway,
) -> None:
    """Client -> tool.invoke event with the bare name -> node's tool.result -> `{result}`."""
    structured = {
        "content": [
            {"type": "text", "text": "hi"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
        ]
    }
    node = await node_socket(gateway, "n1")
    client = await client_socket(gateway)
    try:
        await send_req(
            client, "tool.invoke", {"tool": "n1__Read", "args": {"path": "a.txt"}}, "inv"
        )
        call = await next_event(node, "tool.invoke")
        assert call["tool"] == "Read" and call["args"] == {"path": "a.txt"}
        ack = await request(node, "tool.result", {"callId": call["callId"], "result": structured})
        assert ack["payload"] == {"ok": True}
        reply = json.loads(await client.recv())
        assert reply == {"type": "res", "id": "inv", "ok": True, "payload": {"result": structured}}
    finally:
        await node.close()
        await client.close()


async def test_a_client_call_carries_a_binding_only_where_the_node_may_ask(
    gateway: RunningGateway,
) -> None:
    """tool.invoke from a client is the owner's approval: a Bash call carries a binding
    for exactly its arguments and full access (the node's standard policy may ask), as
    does a Read where credentials live; an ordinary Read carries none (the node never
    looks at it), and the gateway spends no signature on it."""
    bash = {**READ, "name": "Bash", "description": "run a command"}
    runtime = node_runtime([READ, bash])
    ws = await open_raw(gateway.url)
    hello = await handshake(
        ws, mode="node", client_id="n1", tools=[READ, bash], nodeRuntime=runtime
    )
    client = await client_socket(gateway)
    try:
        calls = {}
        keyed = (("Read", {"path": "a.txt"}), ("Bash", {"command": "rm -rf build"}),
                 ("Keys", {"path": "~/.ssh/config"}))  # fmt: skip
        for name, args in keyed:
            tool = "Read" if name == "Keys" else name
            await send_req(client, "tool.invoke", {"tool": f"n1__{tool}", "args": args}, name)
            calls[name] = await next_event(ws, "tool.invoke")
            await request(ws, "tool.result", {"callId": calls[name]["callId"], "result": {}})
        assert "approval" not in calls["Read"]
        key = hello["approvalKey"]
        assert verify(key, "Read", {"path": "~/.ssh/config"}, calls["Keys"]["approval"]) == "full"
        assert verify(key, "Bash", {"command": "rm -rf build"}, calls["Bash"]["approval"]) == "full"
        assert not verify(key, "Bash", {"command": "rm -rf /"}, calls["Bash"]["approval"])
        assert calls["Read"]["callId"] != calls["Bash"]["callId"]
    finally:
        await ws.close()
        await client.close()


async def test_a_node_error_reaches_the_caller_with_the_nodes_message(
    gateway: RunningGateway,
) -> None:
    """tool.result with `error` answers the invoke with 500 and the node's own message."""
    node = await node_socket(gateway, "n1")
    client = await client_socket(gateway)
    try:
        await send_req(client, "tool.invoke", {"tool": "n1__Read", "args": {}}, "inv")
        call = await next_event(node, "tool.invoke")
        await request(
            node,
            "tool.result",
            {"callId": call["callId"], "error": "Failed to read 'x': no such file"},
        )
        reply = json.loads(await client.recv())
        assert reply["error"] == {"code": 500, "message": "Failed to read 'x': no such file"}
    finally:
        await node.close()
        await client.close()


@pytest.mark.parametrize("tool", ["Read", "n2__Read", "n1__Write", "n1__", "__Read"])
async def test_unknown_or_unnamespaced_tools_get_404(gateway: RunningGateway, tool: str) -> None:
    """Only `{connected node}__{its tool}` can be invoked."""
    node = await node_socket(gateway, "n1")
    client = await client_socket(gateway)
    try:
        reply = await request(client, "tool.invoke", {"tool": tool})
        assert reply["error"] == {"code": 404, "message": f"No node provides tool: {tool}"}
    finally:
        await node.close()
        await client.close()


async def test_a_node_dying_mid_call_fails_the_call_with_503_at_once(
    gateway: RunningGateway,
) -> None:
    """The caller gets 503 "Node disconnected: n1" when the node's socket closes."""
    node = await node_socket(gateway, "n1")
    client = await client_socket(gateway)
    try:
        await send_req(client, "tool.invoke", {"tool": "n1__Read"}, "inv")
        await next_event(node, "tool.invoke")
        await node.close()
        reply = json.loads(await client.recv())
        assert reply["error"]["code"] == 503
        assert reply["error"]["message"] == "Node disconnected: n1"
        assert reply["error"]["retryable"] is True
    finally:
        await client.close()


async def test_a_takeover_attempt_leaves_calls_with_their_node(gateway: RunningGateway) -> None:
    """A second connection for a connected node id is refused; the call stays with the
    connection it was sent to, whose result completes it."""
    old = await node_socket(gateway, "n1")
    client = await client_socket(gateway)
    try:
        await send_req(client, "tool.invoke", {"tool": "n1__Read"}, "inv")
        call = await next_event(old, "tool.invoke")
        async with await open_raw(gateway.url) as intruder:
            token = await credential(gateway, "node", "n1")
            params = connect_params(mode="node", client_id="n1", tools=[READ], token=token)
            refused = await request(intruder, "connect", params)
            assert refused["error"]["code"] == 409
            answered = await request(intruder, "tool.result", {"callId": call["callId"],
                                                               "result": {"stolen": True}})  # fmt: skip
            assert answered["error"]["code"] == 101  # never connected: nothing to answer
        await request(old, "tool.result", {"callId": call["callId"], "result": {"ok": 1}})
        reply = json.loads(await client.recv())
        assert reply["ok"] and reply["payload"]["result"] == {"ok": 1}
    finally:
        await old.close()
        await client.close()


async def test_calls_time_out_with_504_and_late_results_are_dropped(
    gateway: RunningGateway,
) -> None:
    """After timeouts.toolMs the caller gets 504; the node's late answer is acked as dropped."""
    client = await client_socket(gateway)
    await request(client, "config.set", {"path": "timeouts.toolMs", "value": 1000})
    node = await node_socket(gateway, "n1")
    try:
        await send_req(client, "tool.invoke", {"tool": "n1__Read"}, "inv")
        call = await next_event(node, "tool.invoke")
        reply = json.loads(await client.recv())
        assert reply["error"]["code"] == 504
        assert reply["error"]["message"] == "Tool request timed out"
        late = await request(node, "tool.result", {"callId": call["callId"], "result": "late"})
        assert late["payload"] == {"ok": True, "dropped": True}
    finally:
        await node.close()
        await client.close()


async def test_a_caller_that_leaves_abandons_its_call_and_the_late_answer_is_dropped(
    gateway: RunningGateway,
) -> None:
    """A client gone while its tool.invoke waits: the call is dropped from the registry
    at once and the node's answer is acked as dropped, not refused."""
    node = await node_socket(gateway, "n1")
    client = await client_socket(gateway)
    try:
        await send_req(client, "tool.invoke", {"tool": "n1__Read"}, "inv")
        call = await next_event(node, "tool.invoke")
        await client.close()
        await until(lambda: not gateway.gateway.nodes._calls)
        late = await request(node, "tool.result", {"callId": call["callId"], "result": "late"})
        assert late["payload"] == {"ok": True, "dropped": True}
    finally:
        await node.close()


async def test_concurrent_calls_answered_out_of_order_reach_their_callers(
    gateway: RunningGateway,
) -> None:
    """Ten tool.invoke calls in flight on one socket; the node answers them in reverse
    order and each reply carries its own request id and result."""
    node = await node_socket(gateway, "n1")
    client = await client_socket(gateway)
    try:
        for i in range(10):
            await send_req(client, "tool.invoke", {"tool": "n1__Read", "args": {"i": i}}, f"r{i}")
        calls = [await next_event(node, "tool.invoke") for _ in range(10)]
        for call in reversed(calls):
            answer = {"callId": call["callId"], "result": f"answer {call['args']['i']}"}
            await send_req(node, "tool.result", answer, f"ack-{call['args']['i']}")
        replies = [json.loads(await client.recv()) for _ in range(10)]
        assert {r["id"]: r["payload"]["result"] for r in replies} == {
            f"r{i}": f"answer {i}" for i in range(10)
        }
        assert [r["id"] for r in replies] == [f"r{i}" for i in reversed(range(10))]
    finally:
        await node.close()
        await client.close()


async def test_tool_results_from_the_wrong_node_or_for_unknown_calls_are_refused(
    gateway: RunningGateway,
) -> None:
    """Another node answering a call gets 403; an unknown callId gets 404."""
    node = await node_socket(gateway, "n1")
    other = await node_socket(gateway, "n2")
    client = await client_socket(gateway)
    try:
        await send_req(client, "tool.invoke", {"tool": "n1__Read"}, "inv")
        call = await next_event(node, "tool.invoke")
        forged = await request(other, "tool.result", {"callId": call["callId"], "result": "forged"})
        assert forged["error"] == {"code": 403, "message": "Node not authorized for this call"}
        unknown = await request(node, "tool.result", {"callId": "nope", "result": 1})
        assert unknown["error"] == {"code": 404, "message": "Unknown callId"}
        bad = await request(node, "tool.result", {"result": 1})
        assert bad["error"]["code"] == 400 and "callId" in bad["error"]["message"]
        await request(node, "tool.result", {"callId": call["callId"], "result": "real"})
        assert json.loads(await client.recv())["payload"] == {"result": "real"}
    finally:
        for ws in (node, other, client):
            await ws.close()


async def test_two_nodes_with_the_same_tool_names_stay_distinct(gateway: RunningGateway) -> None:
    """a__Read goes to node a and b__Read to node b."""
    a = await node_socket(gateway, "a")
    b = await node_socket(gateway, "b")
    client = await client_socket(gateway)
    try:
        for target, ws in (("b", b), ("a", a)):
            await send_req(client, "tool.invoke", {"tool": f"{target}__Read"}, target)
            call = await next_event(ws, "tool.invoke")
            await request(ws, "tool.result", {"callId": call["callId"], "result": f"from {target}"})
            reply = json.loads(await client.recv())
            assert reply["id"] == target and reply["payload"] == {"result": f"from {target}"}
    finally:
        for ws in (a, b, client):
            await ws.close()


async def test_only_nodes_may_answer_calls(gateway: RunningGateway) -> None:
    """A client sending tool.result gets 403 (mode table)."""
    client = await client_socket(gateway)
    try:
        reply = await request(client, "tool.result", {"callId": "x", "result": 1})
        assert reply["error"]["code"] == 403
    finally:
        await client.close()


async def test_runtime_helper_matches_tools() -> None:
    """The test helper builds a runtime covering every tool (guards the other tests)."""
    assert node_runtime([READ]) == {
        "hostCapabilities": ["shell.exec"],
        "toolCapabilities": {"Read": ["shell.exec"]},
    }


async def test_tool_request_sends_the_call_and_reports_to_the_sessions_clients(
    gateway: RunningGateway,
) -> None:
    """tool.request answers "sent" at once; the outcome arrives as a chat.tool event."""
    node = await node_socket(gateway, "n1")
    client = await client_socket(gateway)
    try:
        params = {
            "callId": "mine-1",
            "tool": "n1__Read",
            "args": {"path": "x"},
            "sessionKey": "main",
        }
        reply = await request(client, "tool.request", params)
        assert reply["payload"] == {"status": "sent"}
        call = await next_event(node, "tool.invoke")
        await request(node, "tool.result", {"callId": call["callId"], "result": {"ok": 1}})
        end = await next_event(client, "chat.tool")
        while end["tool"]["phase"] != "end":
            end = await next_event(client, "chat.tool")
        assert end["sessionKey"] == "agent:main:main"
        assert end["tool"]["callId"] == "mine-1" and end["tool"]["result"] == {"ok": 1}
        unknown = await request(client, "tool.request", {**params, "tool": "n9__Read"})
        assert unknown["error"]["code"] == 404
        missing = await request(client, "tool.request", {"callId": "x", "tool": "n1__Read"})
        assert missing["error"]["code"] == 400
    finally:
        await node.close()
        await client.close()


async def test_a_silent_node_is_dropped_and_its_tools_withdrawn(tmp_path: Path) -> None:
    """A node that stops answering (frozen, or its network gone) is closed by the
    keepalive and its tools leave the list (within 15 s by default, short here)."""
    config = ServerConfig(database=tmp_path / "gsv.db", ping_interval=0.1, ping_timeout=0.3)
    async with serve(config, port=0) as gw:
        node = await node_socket(gw, "frozen")
        node.transport.pause_reading()  # reads nothing: pings go unanswered
        await until(lambda: gw.gateway.nodes.online("frozen") is None)
        assert "frozen__Read" not in [t.name for t in gw.gateway.nodes.tool_definitions()]
        node.transport.abort()
