"""`chat.send` as a client written for the original sees it: `queued` only when the
message waits behind a run; during a tool approval, the original's paused reminder. Frames are built by hand, as a foreign client builds them."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from websockets.asyncio.client import ClientConnection

from gsv_core.gateway.server import RunningGateway
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.wire import connect_minimal
from tests.wire import credential
from tests.wire import request

BASH = {"name": "Bash", "description": "run a command", "inputSchema": {"type": "object"}}


async def raw_node(gw: RunningGateway, node_id: str) -> ClientConnection:
    """A node of the original, connected with its minimal frame (it never answers here)."""
    runtime = {"hostCapabilities": ["shell.exec"], "toolCapabilities": {"Bash": ["shell.exec"]}}
    token = await credential(gw, "node", node_id)
    client = {"id": node_id, "mode": "node"}
    return await connect_minimal(
        gw.url, client, tools=[BASH], nodeRuntime=runtime, auth={"token": token}
    )


async def run_end(ws: ClientConnection, run_id: str) -> dict[str, Any]:
    """The `chat` event that ends run `run_id`, as an old client waits for it."""
    while True:
        frame = json.loads(await ws.recv())
        payload = frame.get("payload") or {}
        ours = frame.get("event") == "chat" and payload.get("runId") == run_id
        if ours and payload["state"] in ("final", "error"):
            return dict(payload)


async def test_a_message_that_starts_a_run_has_no_queued_keys(
    owner: ClientConnection, fake: FakeProvider
) -> None:
    """An idle session: `{status: started, runId}` and nothing about a queue."""
    fake.enqueue("Hello")
    reply = await request(owner, "chat.send", {"sessionKey": "main", "message": "hi"})
    assert reply["ok"], reply
    assert set(reply["payload"]) == {"status", "runId"}
    assert reply["payload"]["status"] == "started"
    assert (await run_end(owner, reply["payload"]["runId"]))["state"] == "final"


async def test_a_message_behind_a_run_says_queued_with_its_position(
    owner: ClientConnection, fake: FakeProvider
) -> None:
    """A busy session: the second and third messages are queued at 1 and 2."""
    gate = asyncio.Event()
    fake.enqueue("working...", gate)
    first = await request(owner, "chat.send", {"sessionKey": "main", "message": "one"})
    await fake.streaming.wait()
    replies = [
        (await request(owner, "chat.send", {"sessionKey": "main", "message": text}))["payload"]
        for text in ("two", "three")
    ]
    assert "queued" not in first["payload"]
    assert [(r["status"], r["queued"], r["queuePosition"]) for r in replies] == [
        ("started", True, 1),
        ("started", True, 2),
    ]
    gate.set()
    for reply in replies:
        assert (await run_end(owner, reply["runId"]))["state"] == "final"


async def next_event(ws: ClientConnection, name: str) -> dict[str, Any]:
    while True:
        frame = json.loads(await ws.recv())
        if frame.get("type") == "evt" and frame["event"] == name:
            return dict(frame["payload"])


async def test_a_message_during_an_approval_is_queued_and_answered_paused(
    gw: RunningGateway, owner: ClientConnection, fake: FakeProvider
) -> None:
    """The original's reminder comes back (status paused); the message is kept and runs."""
    fake.enqueue(call("n1__Bash", {"command": "rm -rf build"}))
    fake.enqueue("Not removed.")
    fake.enqueue("Waiting done.")
    async with await raw_node(gw, "n1"):
        first = await request(owner, "chat.send", {"sessionKey": "main", "message": "clean"})
        approval = await next_event(owner, "tool.approval")
        reply = await request(owner, "chat.send", {"sessionKey": "main", "message": "hurry"})
        answer = reply["payload"]
        assert answer["status"] == "paused"
        assert answer["approvalId"] == approval["approvalId"]
        assert answer["response"] == (
            f"Run is paused waiting for tool approval ({approval['approvalId']}) for n1__Bash.\n"
            'Reply with "yes" to approve or "no" to deny.'
        )
        assert (answer["queued"], answer["queuePosition"]) == (True, 1)
        denied = await request(owner, "chat.send", {"sessionKey": "main", "message": "no"})
        assert denied["payload"]["status"] == "paused"
        assert (await run_end(owner, first["payload"]["runId"]))["state"] == "final"
        assert (await run_end(owner, answer["runId"]))["state"] == "final"
    assert fake.requests[-1].messages[-1]["content"] == "hurry"
