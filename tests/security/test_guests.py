"""Who is speaking decides what the agent may do (issue 42), tried as a paired friend would:
a real gateway, a scripted model, an external channel worker `mychat` speaking raw frames,
with `channels.mychat = {dmPolicy: pairing, owners: [alice], allowFrom: [alice, bob]}`.
Each bullet of the issue fails for bob: the owner's memory and conversations, other
sessions, background output, approvals and message targets stay the owner's."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection

from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.wire import handshake
from tests.wire import open_raw

PASSPORT = "passport number X1234567"
PIN = "my bank PIN is 4711"


@dataclass
class Worker:
    """An external channel worker for `mychat`: sends what its users write, collects
    what the gateway sends them."""

    ws: ClientConnection
    outbound: list[dict[str, Any]] = field(default_factory=list)
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    count: int = 0

    async def read(self) -> None:
        async for raw in self.ws:
            frame = json.loads(raw)
            if frame.get("type") == "evt" and frame.get("event") == "channel.outbound":
                self.outbound.append(frame["payload"])
            elif frame.get("type") == "res":
                self.answers[frame["id"]] = frame
            self.changed.set()

    async def say(self, sender: str, text: str, peer: str | None = None) -> dict[str, Any]:
        """`sender` writes `text` (in a DM with them unless `peer`); the gateway's answer
        to channel.inbound."""
        self.count += 1
        frame_id = f"in-{self.count}"
        params = {"channel": "mychat", "accountId": "default",
                  "peer": {"kind": "dm", "id": peer or sender},
                  "sender": {"id": sender, "name": sender.title()},
                  "message": {"id": f"m{self.count}", "text": text}}  # fmt: skip
        await self.ws.send(json.dumps({"type": "req", "id": frame_id, "method": "channel.inbound",
                                       "params": params}))  # fmt: skip
        await self.until(lambda: frame_id in self.answers, "the inbound answer")
        return self.answers[frame_id]

    def texts(self, peer: str) -> list[str]:
        return [o["message"]["text"] for o in self.outbound if o["peer"]["id"] == peer]

    async def until(self, predicate: Any, what: str) -> None:
        async with asyncio.timeout(60):
            while not predicate():
                self.changed.clear()
                try:
                    async with asyncio.timeout(1):
                        await self.changed.wait()
                except TimeoutError:
                    pass
        assert predicate(), what


@pytest.fixture
async def worker(gw: RunningGateway, client: GatewayClient) -> AsyncIterator[Worker]:
    settings = {"dmPolicy": "pairing", "owners": ["alice"], "allowFrom": ["alice", "bob"]}
    await client.call("config.set", {"path": "channels.mychat", "value": settings})
    await client.call("config.set", {"path": "session.dmScope", "value": "per-channel-peer"})
    await client.call(
        "workspace.write", {"path": "MEMORY.md", "content": f"# Memory\n{PASSPORT}\n"}
    )
    ws = await open_raw(gw.url)
    await handshake(ws, mode="channel", client_id="bridge", channel="mychat", account_id="default")
    w = Worker(ws)
    reader = asyncio.create_task(w.read())
    yield w
    reader.cancel()
    await ws.close()


def tool_results(fake: FakeProvider) -> list[str]:
    """Every tool result's text the model read, in order, across all requests."""
    seen: dict[str, str] = {}
    for request in fake.requests:
        for message in request.messages:
            if message["role"] == "toolResult":
                text = " ".join(str(b.get("text", "")) for b in message["content"])
                seen.setdefault(message["toolCallId"], text)
    return list(seen.values())


async def bob_calls(worker: Worker, fake: FakeProvider, tool: str, args: dict[str, Any]) -> str:
    """Bob's message makes the model call `tool`; the result the model read."""
    fake.enqueue(call(tool, args))
    fake.enqueue("done")
    before, replies = len(tool_results(fake)), worker.texts("bob").count("done")
    await worker.say("bob", "go")
    await worker.until(lambda: worker.texts("bob").count("done") > replies, "bob's reply")
    return tool_results(fake)[before]


async def test_bob_cannot_read_the_owners_memory(worker: Worker, fake: FakeProvider) -> None:
    """`gsv__ReadFile MEMORY.md` reads bob's own folder, where there is none; neither the
    result nor his prompt carries the owner's memory."""
    result = await bob_calls(worker, fake, "gsv__ReadFile", {"path": "MEMORY.md"})
    assert PASSPORT not in result and "guests/mychat/bob/MEMORY.md" in result
    escape = await bob_calls(worker, fake, "gsv__ReadFile", {"path": "../../MEMORY.md"})
    assert PASSPORT not in escape and "traversal" in escape
    assert all(PASSPORT not in request.system for request in fake.requests)
    assert "a guest of your human" in fake.requests[0].system


async def test_bobs_files_land_in_his_own_folder(
    worker: Worker, fake: FakeProvider, client: GatewayClient
) -> None:
    await bob_calls(worker, fake, "gsv__WriteFile", {"path": "notes.md", "content": "bob's"})
    found = await client.call("workspace.read", {"path": "guests/mychat/bob/notes.md"})
    assert found["content"] == "bob's"
    assert (await client.call("workspace.read", {"path": "MEMORY.md"}))["content"].endswith(
        f"{PASSPORT}\n"
    )


@pytest.mark.parametrize(
    ("tool", "args"),
    [("gsv__SessionsList", {"messageLimit": 5}),
     ("gsv__SessionSend", {"sessionKey": "main", "message": "hi from the owner"}),
     ("gsv__Spawn", {"task": "read MEMORY.md"}), ("gsv__Cron", {"action": "list"}),
     ("gsv__ConfigGet", {"path": "model"}), ("gsv__LogsGet", {}),
     ("gsv__Transfer", {"source": "gsv:workspace/MEMORY.md", "destination": "gsv:workspace/x"})],
)  # fmt: skip
async def test_bob_is_refused_the_owners_tools_and_told_why(
    worker: Worker,
    fake: FakeProvider,
    client: GatewayClient,
    log: EventLog,
    tool: str,
    args: dict[str, Any],
) -> None:
    """Not offered to his runs, and refused with a reason when called anyway."""
    run = (await send(client, PIN, key="main"))["runId"]  # the owner's own CLI conversation
    await log.ended(run)
    result = await bob_calls(worker, fake, tool, args)
    assert f"{tool} is not available to a guest of the owner" in result
    assert PIN not in result and PASSPORT not in result
    offered = {spec.name for spec in fake.requests[-2].tools}
    assert tool not in offered and "gsv__ReadFile" in offered
    history = await client.call("session.history", {"sessionKey": "main"})
    assert "hi from the owner" not in json.dumps(history)


async def test_a_message_from_bobs_run_goes_back_to_bob_only(
    worker: Worker, fake: FakeProvider
) -> None:
    refused = await bob_calls(worker, fake, "gsv__Message", {"text": "hi", "to": "alice"})
    assert "goes back to that guest only" in refused and worker.texts("alice") == []
    ok = await bob_calls(worker, fake, "gsv__Message", {"text": "to myself"})
    assert '"sent": true' in ok.lower() and "to myself" in worker.texts("bob")


async def test_the_envelope_names_the_sender_and_their_standing_in_a_dm(
    worker: Worker, fake: FakeProvider
) -> None:
    """In DMs too, and a display name cannot pass for the envelope's marks."""
    fake.enqueue("hello bob")
    await worker.say("bob", "hi")
    await worker.until(lambda: worker.texts("bob"), "the reply")
    text = json.dumps(fake.requests[-1].messages[-1]["content"], ensure_ascii=False)
    assert re.search(r"\[mychat · [^\]]* · Bob \(guest\)\] hi", text)


async def test_heartbeat_and_message_defaults_never_pick_a_guest(
    worker: Worker, fake: FakeProvider, client: GatewayClient
) -> None:
    """Under dmScope main, alice then bob write; the heartbeat's `last` target and the
    owner's target-less gsv__Message go to alice, the owner, not bob who wrote last."""
    await client.call("config.set", {"path": "session.dmScope", "value": "main"})
    for who in ("alice", "bob"):
        fake.enqueue(f"hi {who}")
        await worker.say(who, "hello")
        await worker.until(lambda who=who: f"hi {who}" in worker.texts(who), "the reply")
    fake.enqueue("the certificate expires tomorrow")
    beat = await client.call("heartbeat.trigger", {})
    assert beat["deliveredTo"] == "mychat:default:alice"
    fake.enqueue(call("gsv__Message", {"text": "note to self: buy milk"}))
    fake.enqueue("noted")
    run = (await send(client, "remind me", key="main"))["runId"]
    await worker.until(lambda: "note to self: buy milk" in worker.texts("alice"), "the note")
    assert "note to self: buy milk" not in worker.texts("bob") and run


async def test_an_answer_from_a_channel_counts_only_where_the_run_asked(
    worker: Worker, fake: FakeProvider, client: GatewayClient, log: EventLog
) -> None:
    """The owner's CLI run asks before a cron change; "yes" from the worker, even with
    sender alice (an owner), does not answer it; the CLI does."""
    fake.enqueue(call("gsv__Cron", {"action": "add", "job": {"name": "x"}}))
    fake.enqueue("asked")
    run = (await send(client, "schedule it", key="main"))["runId"]
    await log.wait(lambda: any(n == "tool.approval" for n, _ in log.events), "the approval")
    [pending] = (await client.call("tool.approvals"))["approvals"]
    fake.enqueue("a normal reply")
    answered = await worker.say("alice", "yes")
    assert answered["ok"] and answered["payload"].get("approvalId") is None
    assert [a["approvalId"] for a in (await client.call("tool.approvals"))["approvals"]] == [
        pending["approvalId"]
    ]
    await client.call("tool.approve", {"approvalId": pending["approvalId"], "decision": "deny"})
    assert (await log.ended(run))["state"] == "final"


async def test_a_grant_opens_a_node_tool_to_guests_and_nothing_else(
    gw: RunningGateway, worker: Worker, fake: FakeProvider, client: GatewayClient, tmp_path: Path
) -> None:
    """`channels.mychat.guestTools: [n1__Read]`: bob's run is offered that tool and may
    call it; n1__Bash stays refused."""
    from tests.approval.test_flow import node

    await client.call("config.set", {"path": "channels.mychat.guestTools", "value": ["n1__Read"]})
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "menu.txt").write_text("soup of the day\n")
    async with node(gw.url, workspace):
        read = await bob_calls(worker, fake, "n1__Read", {"path": "menu.txt"})
        bash = await bob_calls(worker, fake, "n1__Bash", {"command": "cat menu.txt"})
    assert "soup of the day" in read
    assert "n1__Bash is not available to a guest" in bash and "guestTools" in bash


async def test_pairing_approve_says_what_a_guest_may_do(
    worker: Worker, client: GatewayClient
) -> None:
    await worker.say("carol", "hello?")
    approved = await client.call("pair.approve", {"channel": "mychat", "senderId": "carol"})
    assert approved["reach"].startswith("a guest:") and "guests/mychat/carol/" in approved["reach"]
    await worker.say("dave", "hello?")
    owner = await client.call("pair.approve", {"channel": "mychat", "senderId": "dave",
                                               "owner": True})  # fmt: skip
    assert owner["reach"].startswith("an owner")
    settings = (await client.call("config.get", {"path": "channels.mychat"}))["value"]
    assert "dave" in settings["owners"] and "carol" not in settings["owners"]
