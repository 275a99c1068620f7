"""A node written for the original: it serves tool calls with `tool.invoke` events and
`tool.result` requests, and never answers `node.probe`, so runs do not wait for that: the
probe is asked in the background and its answer, whenever it comes, serves later runs.
Frames are built by hand, as the original's node daemon builds them."""

from __future__ import annotations

import json
from typing import Any

from websockets.asyncio.client import ClientConnection

from gsv_core.gateway.server import RunningGateway
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.gateway.test_foreign_chat import raw_node
from tests.gateway.test_foreign_chat import run_end
from tests.skills.conftest import skill_text
from tests.skills.conftest import workspace_dir
from tests.skills.conftest import write_skill
from tests.wire import request


async def next_probe(node: ClientConnection) -> dict[str, Any]:
    while True:
        frame = json.loads(await node.recv())
        if frame.get("type") == "evt" and frame["event"] == "node.probe":
            return dict(frame["payload"])


async def chat(owner: ClientConnection, text: str) -> dict[str, Any]:
    reply = await request(owner, "chat.send", {"sessionKey": "main", "message": text})
    return await run_end(owner, reply["payload"]["runId"])


async def test_a_run_ends_while_the_nodes_probe_is_still_unanswered(
    gw: RunningGateway, owner: ClientConnection, fake: FakeProvider
) -> None:
    """The run's prompt uses what is known; the late answer is still taken (not expired)."""
    await gw.gateway.workspace.delete("main", "BOOTSTRAP.md")  # leave commissioning mode
    write_skill(workspace_dir(gw), "shell-work", skill_text(description="shell work", bins=["sh"]))
    async with await raw_node(gw, "old-node") as node:
        assert (await chat(owner, "first"))["state"] == "final"
        probe = await next_probe(node)  # asked, and the run did not wait for the answer
        assert "sh" in probe["bins"]
        assert "shell-work" not in fake.requests[0].system
        answer = {"probeId": probe["probeId"], "ok": True, "bins": {"sh": True}}
        late = await request(node, "node.probe.result", answer)
        assert late["payload"] == {"ok": True}  # the probe was still waiting: not dropped
        assert (await chat(owner, "second"))["state"] == "final"
    assert "shell-work" in fake.requests[1].system


async def next_invoke(node: ClientConnection) -> dict[str, Any]:
    while True:
        frame = json.loads(await node.recv())
        if frame.get("type") == "evt" and frame["event"] == "tool.invoke":
            return dict(frame["payload"])


async def test_a_node_of_the_original_serves_a_clients_tool_call(
    gw: RunningGateway, owner: ClientConnection
) -> None:
    """tool.invoke reaches it as `{callId, tool, args}` (the bare name); its tool.result
    answers the client's request with `{result}`."""
    async with await raw_node(gw, "old-node") as node:
        await owner.send(json.dumps({"type": "req", "id": "call-1", "method": "tool.invoke",
                                     "params": {"tool": "old-node__Bash",
                                                "args": {"command": "echo hi"}}}))  # fmt: skip
        invoke = await next_invoke(node)
        assert (invoke["tool"], invoke["args"]) == ("Bash", {"command": "echo hi"})
        answer = {"callId": invoke["callId"], "result": {"output": "hi\n", "exitCode": 0}}
        assert (await request(node, "tool.result", answer))["ok"]
        while True:
            frame = json.loads(await owner.recv())
            if frame.get("id") == "call-1":
                break
    assert frame["ok"], frame
    assert frame["payload"] == {"result": {"output": "hi\n", "exitCode": 0}}


async def test_a_node_of_the_original_serves_the_agents_tool_call(
    gw: RunningGateway, owner: ClientConnection, fake: FakeProvider
) -> None:
    """A model's call to `{nodeId}__{tool}` reaches the node; its result reaches the model."""
    fake.enqueue(call("old-node__Bash", {"command": "echo hi"}))
    fake.enqueue("It said hi.")
    async with await raw_node(gw, "old-node") as node:
        reply = await request(owner, "chat.send", {"sessionKey": "main", "message": "say hi"})
        invoke = await next_invoke(node)
        answer = {"callId": invoke["callId"], "result": "hi"}
        assert (await request(node, "tool.result", answer))["ok"]
        assert (await run_end(owner, reply["payload"]["runId"]))["state"] == "final"
    [result] = [m for m in fake.requests[1].messages if m["role"] == "toolResult"]
    assert "hi" in json.dumps(result["content"])
