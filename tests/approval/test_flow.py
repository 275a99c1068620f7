"""The approval flow on a real gateway with a real node and a scripted model: pause,
approve, deny, expire, "yes"/"no" replies, owners on channels, remembered approvals,
and the node refusing a call its binding does not cover."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection
from websockets.asyncio.server import serve as ws_serve

from gsv_core.approval.binding import sign
from gsv_core.channels.base import InboundMessage
from gsv_core.channels.base import Peer
from gsv_core.channels.base import Sender
from gsv_core.client import Backoff
from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from gsv_core.node.daemon import NodeDaemon
from gsv_core.node.daemon import NodeSettings
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.wire import owner_token


@asynccontextmanager
async def node(
    url: str, workspace: Path, node_id: str = "n1", token: str | None = None, sandbox: str = "off"
) -> AsyncIterator[NodeDaemon]:
    """A real node connected to `url`. Without a sandbox by default: these tests are of
    the approval gate where it is the only boundary (on a sandboxed node its latitude lets
    contained lines run unasked: tests/node/sandbox pass `sandbox="auto"`)."""
    daemon = NodeDaemon(NodeSettings(url=url, node_id=node_id, workspace=workspace,
                                     backoff=Backoff(base=0.05, cap=0.2), token=token,
                                     owner_token=owner_token(), sandbox=sandbox))  # fmt: skip
    stop = asyncio.Event()
    task = asyncio.create_task(daemon.run(stop))
    await asyncio.wait_for(daemon.connected.wait(), 30)
    try:
        yield daemon
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


def tool_result(fake: FakeProvider, index: int = 1) -> dict[str, Any]:
    return next(m for m in fake.requests[index].messages if m["role"] == "toolResult")


async def approval_event(log: EventLog) -> dict[str, Any]:
    await log.wait(lambda: any(n == "tool.approval" for n, _ in log.events), "an approval request")
    return next(p for n, p in log.events if n == "tool.approval")


async def test_a_dangerous_command_waits_and_runs_once_approved(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    """rm asks; the paused event shows the exact command; tool.approve lets it run."""
    (tmp_path / "build").mkdir()
    fake.enqueue(call("n1__Bash", {"command": "rm -rf build"}))
    fake.enqueue("Removed it.")
    async with node(gw.url, tmp_path):
        run = (await send(client, "clean up"))["runId"]
        request = await approval_event(log)
        assert request["tool"] == "n1__Bash" and request["summary"] == "rm -rf build"
        assert request["reason"] == "rm is not on the read-only allowlist"
        assert request["state"] == "pending"
        paused = next(p for p in log.of_run(run) if p["state"] == "paused")
        assert "rm -rf build" in paused["message"]["content"][0]["text"]
        assert (tmp_path / "build").exists()  # nothing ran yet
        listed = (await client.call("tool.approvals"))["approvals"]
        assert [a["approvalId"] for a in listed] == [request["approvalId"]]
        answer = await client.call(
            "tool.approve", {"approvalId": request["approvalId"], "decision": "allow"}
        )
        assert answer["decision"] == "allow"
        assert (await log.ended(run))["state"] == "final"
    assert not (tmp_path / "build").exists()
    states = [p["state"] for n, p in log.events if n == "tool.approval"]
    assert states == ["pending", "approved"]


async def test_a_denied_call_tells_the_model(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    """Denied: the model reads "denied by user" as the tool's error; nothing ran."""
    (tmp_path / "keep").mkdir()
    fake.enqueue(call("n1__Bash", {"command": "rm -rf keep"}))
    fake.enqueue("OK, I will not.")
    async with node(gw.url, tmp_path):
        run = (await send(client, "delete keep"))["runId"]
        request = await approval_event(log)
        await client.call("tool.approve", {"approvalId": request["approvalId"], "decision": "deny"})
        await log.ended(run)
    result = tool_result(fake)
    assert result["isError"] and "denied by user" in result["content"][0]["text"]
    assert (tmp_path / "keep").exists()


async def test_approvals_expire_closed(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    """Nobody answers: after timeoutSeconds the tool fails with "approval timed out"."""
    await client.call("config.set", {"path": "toolApproval.timeoutSeconds", "value": 1})
    fake.enqueue(call("n1__Bash", {"command": "rm -rf x"}))
    fake.enqueue("It timed out.")
    async with node(gw.url, tmp_path):
        run = (await send(client, "go"))["runId"]
        assert (await log.ended(run))["state"] == "final"
    result = tool_result(fake)
    assert result["isError"] and "approval timed out" in result["content"][0]["text"]
    assert [p["state"] for n, p in log.events if n == "tool.approval"] == ["pending", "expired"]
    assert (await client.call("tool.approvals"))["approvals"] == []


async def test_yes_and_no_replies_answer_other_words_are_queued(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    """A bare "yes" approves; "please wait" is queued as a message, not dropped."""
    fake.enqueue(call("n1__Bash", {"command": "rm -rf gone"}))
    fake.enqueue("Done.")
    fake.enqueue("Sure, waiting.")
    async with node(gw.url, tmp_path):
        run = (await send(client, "remove gone"))["runId"]
        await approval_event(log)
        other = await send(client, "please wait")
        assert other["status"] == "paused" and other["queued"] is True
        answered = await send(client, "Yes")
        assert answered["status"] == "paused" and answered["response"] == "Approved n1__Bash."
        assert (await log.ended(run))["state"] == "final"
        assert (await log.ended(other["runId"]))["state"] == "final"
    assert fake.requests[-1].messages[-1]["content"] == "please wait"


async def test_remember_for_the_session_skips_the_same_call_next_time(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    """remember: "session" approves the identical call again without asking."""
    for _ in range(2):
        fake.enqueue(call("n1__Bash", {"command": "rm -f a.tmp"}))
        fake.enqueue("ok")
    async with node(gw.url, tmp_path):
        first = (await send(client, "one"))["runId"]
        request = await approval_event(log)
        await client.call("tool.approve", {"approvalId": request["approvalId"], "decision": "allow",
                                           "remember": "session"})  # fmt: skip
        await log.ended(first)
        second = (await send(client, "two"))["runId"]
        assert (await log.ended(second))["state"] == "final"
    assert [p["state"] for n, p in log.events if n == "tool.approval"] == ["pending", "approved"]


async def test_protected_calls_are_denied_without_asking(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    """Killing the gateway is refused by policy: no approval is even offered."""
    import os

    fake.enqueue(call("n1__Bash", {"command": f"kill -9 {os.getpid()}"}))
    fake.enqueue("I cannot.")
    async with node(gw.url, tmp_path):
        await log.ended((await send(client, "stop yourself"))["runId"])
    result = tool_result(fake)
    assert "denied by policy: would stop the gsv gateway or node" in result["content"][0]["text"]
    assert not any(n == "tool.approval" for n, _ in log.events)


async def test_unknown_approvals_and_bad_decisions(client: GatewayClient) -> None:
    """Approving an id that does not exist is a 404; a bad decision a 400."""
    from gsv_core.errors import InvalidParams
    from gsv_core.errors import NotFound

    with pytest.raises(NotFound, match="No pending approval"):
        await client.call("tool.approve", {"approvalId": "abc123", "decision": "allow"})
    with pytest.raises(InvalidParams):
        await client.call("tool.approve", {"approvalId": "abc123", "decision": "maybe"})


async def test_channel_owners_approve_and_others_do_not(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    """On a channel the prompt is sent as text; a non-owner's "yes" in the group is just a
    message, the owner's "yes" approves."""
    await client.call("config.set", {"path": "channels.test",
                                     "value": {"dmPolicy": "open", "owners": ["boss"],
                                               "groups": {"requireMention": False}}})  # fmt: skip
    await client.call("channel.start", {"channel": "test"})
    channel = gw.gateway.channels.adapters["test"]
    fake.enqueue(call("n1__Bash", {"command": "rm -rf tmp"}))
    fake.enqueue("Cleaned.")
    fake.enqueue("noted")

    def group_message(sender: str, text: str, msg_id: str) -> InboundMessage:
        return InboundMessage(
            "test", "default", Peer("group", "g1"), msg_id, text, sender=Sender(sender)
        )

    async with node(gw.url, tmp_path):
        await channel.inject(group_message("boss", "clean tmp", "m1"))  # type: ignore[attr-defined]
        request = await approval_event(log)
        await log.wait(
            lambda: any("Approval needed" in t for t in channel.texts("g1")),
            "the prompt in the chat",
        )  # type: ignore[attr-defined]
        assert request["approvalId"] in channel.texts("g1")[0]  # type: ignore[attr-defined]
        await channel.inject(group_message("mallory", "yes", "m2"))  # type: ignore[attr-defined]
        await asyncio.sleep(0.1)
        assert gw.gateway.approvals.pending()  # still waiting
        await channel.inject(group_message("boss", "yes", "m3"))  # type: ignore[attr-defined]
        await log.wait(lambda: "Cleaned." in channel.texts("g1"), "the final answer")  # type: ignore[attr-defined]


async def test_a_sub_agents_command_is_asked_in_the_chat_that_spawned_it(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    """The owner asks in a group; the agent's sub-agent wants to run `python3 job.py` on
    the node: the prompt reaches the group, the owner's "yes" there runs it, and the
    parent's run ends with its answer."""
    await client.call("config.set", {"path": "channels.test",
                                     "value": {"dmPolicy": "open", "owners": ["boss"],
                                               "groups": {"requireMention": False}}})  # fmt: skip
    await client.call("channel.start", {"channel": "test"})
    channel = gw.gateway.channels.adapters["test"]
    (tmp_path / "job.py").write_text("open('done.txt', 'w').write('ran')\n")
    fake.enqueue(call("gsv__Spawn", {"task": "Run the job", "tools": ["n1__Bash"]}))
    fake.enqueue(call("n1__Bash", {"command": "python3 job.py"}))
    fake.enqueue("The job ran.")
    fake.enqueue("Your job is done.")

    def boss(text: str, msg_id: str) -> InboundMessage:
        return InboundMessage("test", "default", Peer("group", "g1"), msg_id, text,
                              sender=Sender("boss"))  # fmt: skip

    async with node(gw.url, tmp_path):
        await channel.inject(boss("run my job", "m1"))  # type: ignore[attr-defined]
        request = await approval_event(log)
        assert ":spawn:" in request["sessionKey"] and request["summary"] == "python3 job.py"
        await log.wait(
            lambda: any(request["approvalId"] in t for t in channel.texts("g1")),  # type: ignore[attr-defined]
            "the sub-agent's prompt in the group",
        )
        assert not (tmp_path / "done.txt").exists()
        await channel.inject(boss("yes", "m2"))  # type: ignore[attr-defined]
        parent = next(p["runId"] for n, p in log.events if n == "chat.tool")  # the Spawn call
        assert (await log.ended(parent))["message"]["content"][0]["text"] == "Your job is done."
    assert (tmp_path / "done.txt").read_text() == "ran"


async def greet_node(ws: ServerConnection, key: str) -> None:
    """Answer a node's connect as a gateway would, with the approval key."""
    hello = json.loads(await ws.recv())
    await ws.send(json.dumps({"type": "res", "id": hello["id"], "ok": True, "payload": {
        "type": "hello-ok", "protocol": 1, "server": {"version": "t", "connectionId": "c"},
        "features": {"methods": [], "events": []}, "approvalKey": key}}))  # fmt: skip


async def invoke_bash(
    ws: ServerConnection, call_id: str, args: dict[str, Any], binding: Any = None
) -> dict[str, Any]:
    """Send the node one Bash call (with `binding`, if any); its tool.result params."""
    payload: dict[str, Any] = {"callId": call_id, "tool": "Bash", "args": args}
    if binding:
        payload["approval"] = binding
    await ws.send(json.dumps({"type": "evt", "event": "tool.invoke", "payload": payload}))
    reply = json.loads(await ws.recv())
    ok = {"type": "res", "id": reply["id"], "ok": True, "payload": {"ok": True}}
    await ws.send(json.dumps(ok))
    return dict(reply["params"])


async def test_the_node_refuses_calls_its_binding_does_not_cover(tmp_path: Path) -> None:
    """At the node: a binding for one command does not cover another, and a dangerous
    command without any binding is refused; a matching binding runs."""
    key = "k" * 64
    results: list[dict[str, Any]] = []
    sent = asyncio.Event()

    async def fake_gateway(ws: ServerConnection) -> None:
        await greet_node(ws, key)
        calls = [
            ("c1", {"command": "rm -rf victim"}, sign(key, "Bash", {"command": "rm -rf other"}, "allow")),
            ("c2", {"command": "rm -rf victim"}, None),
            ("c3", {"command": "rm -rf victim"}, sign(key, "Bash", {"command": "rm -rf victim"}, "allow")),
        ]  # fmt: skip
        for call_id, args, binding in calls:
            results.append(await invoke_bash(ws, call_id, args, binding))
        sent.set()
        await ws.wait_closed()

    (tmp_path / "victim").mkdir()
    async with ws_serve(fake_gateway, "127.0.0.1", 0, compression=None) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        async with node(f"ws://127.0.0.1:{port}/ws", tmp_path, token="n0.anything"):
            await asyncio.wait_for(sent.wait(), 30)
    assert "does not cover exactly this call" in results[0]["error"]
    assert "does not cover exactly this call" in results[1]["error"]
    assert results[2]["result"]["status"] == "completed"
    assert not (tmp_path / "victim").exists()
