"""gsv__MemorySearch and gsv__MemoryGet through a real gateway and a scripted model: the
owner finds notes and every conversation; a paired stranger (per-peer sessions) finds
only their own; under dmScope main a stranger finds nothing; bad arguments are told."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gsv_core.agent.tools import ToolCallContext
from gsv_core.client import GatewayClient
from gsv_core.gateway.memory_reach import memory_scope
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.spawn_origins import SpawnOrigin
from gsv_core.memory.query import query_terms
from gsv_core.memory.search import MemoryScope
from gsv_core.memory.search import SearchRequest
from gsv_core.routing import RoutingSettings
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.security.test_guests import Worker
from tests.security.test_guests import tool_results
from tests.wire import handshake
from tests.wire import open_raw

NOTE = "# Memory\nThe owner's passport is in the blue folder.\n"


async def open_worker(gw: RunningGateway, client: GatewayClient, dm_scope: str) -> Worker:
    settings = {"dmPolicy": "pairing", "owners": ["alice"], "allowFrom": ["alice", "bob", "carol"]}
    await client.call("config.set", {"path": "channels.mychat", "value": settings})
    await client.call("config.set", {"path": "session.dmScope", "value": dm_scope})
    await client.call("workspace.write", {"path": "MEMORY.md", "content": NOTE})
    ws = await open_raw(gw.url)
    await handshake(ws, mode="channel", client_id="bridge", channel="mychat", account_id="default")
    return Worker(ws)


@pytest.fixture(params=["per-peer"])
async def worker(
    request: pytest.FixtureRequest, gw: RunningGateway, client: GatewayClient
) -> AsyncIterator[Worker]:
    w = await open_worker(gw, client, request.param)
    reader = asyncio.create_task(w.read())
    yield w
    reader.cancel()
    await w.ws.close()


async def said(worker: Worker, who: str, text: str) -> None:
    """`who` writes `text`; waits for the (default "ok") reply."""
    replies = len(worker.texts(who))
    await worker.say(who, text)
    await worker.until(lambda: len(worker.texts(who)) > replies, f"{who}'s reply")


async def calls(worker: Worker, fake: FakeProvider, who: str, tool: str, args: dict) -> str:
    """`who`'s message makes the model call `tool`; the result the model read."""
    fake.enqueue(call(tool, args))
    fake.enqueue("done")
    before = len(tool_results(fake))
    await said(worker, who, "go")
    return tool_results(fake)[before]


async def owner_calls(
    client: GatewayClient, log: EventLog, fake: FakeProvider, tool: str, args: dict
) -> dict[str, Any]:
    fake.enqueue(call(tool, args))
    fake.enqueue("done")
    before = len(tool_results(fake))
    run_id = (await send(client, "look it up"))["runId"]
    await log.ended(run_id)
    text = tool_results(fake)[before]
    assert not text.startswith("Error"), text
    found: dict[str, Any] = json.loads(text)
    return found


async def test_both_tools_are_in_the_first_request(
    client: GatewayClient, log: EventLog, fake: FakeProvider
) -> None:
    """No tool search needed: the first request offers both, each with a description."""
    await log.ended((await send(client, "hi"))["runId"])
    offered = {spec.name: spec for spec in fake.requests[0].tools}
    for name in ("gsv__MemorySearch", "gsv__MemoryGet"):
        assert name in offered and offered[name].description


async def test_the_owner_finds_notes_and_every_conversation(
    worker: Worker, client: GatewayClient, log: EventLog, fake: FakeProvider
) -> None:
    """A client's run finds the owner's note and a guest's chat, and reads around a hit."""
    await said(worker, "bob", "my passport expired last May")
    found = await owner_calls(client, log, fake, "gsv__MemorySearch", {"query": "passport"})
    assert found["searched"] == "notes and every session"
    sources = {(h["source"], h.get("path") or h.get("sessionKey")) for h in found["results"]}
    assert ("note", "MEMORY.md") in sources
    assert ("session", "agent:main:dm:bob") in sources
    ref = next(h["ref"] for h in found["results"] if h["source"] == "session")
    around = await owner_calls(client, log, fake, "gsv__MemoryGet", {"ref": ref, "after": 1})
    texts = [p["text"] for p in around["pieces"]]
    assert texts[0].endswith("my passport expired last May") and around["pieces"][0]["hit"]


async def test_a_guest_finds_their_own_conversation_only(
    worker: Worker, client: GatewayClient, log: EventLog, fake: FakeProvider, gw: RunningGateway
) -> None:
    """Bob finds his own words, never the owner's note, the owner's chat or carol's."""
    await said(worker, "bob", "bob's llama is called Pedro")
    await said(worker, "carol", "carol's llama is called Lola")
    await said(worker, "alice", "the owner's llama is called Rex")
    await log.ended((await send(client, "my own llama is secret"))["runId"])
    text = await calls(worker, fake, "bob", "gsv__MemorySearch", {"query": "llama passport"})
    found = json.loads(text)
    assert found["searched"] == "this conversation only"
    assert {h["sessionKey"] for h in found["results"]} == {"agent:main:dm:bob"}
    for secret in ("Lola", "Rex", "blue folder", "secret"):
        assert secret not in text
    notes = await calls(
        worker, fake, "bob", "gsv__MemorySearch", {"query": "passport", "scope": "notes"}
    )
    assert json.loads(notes)["count"] == 0
    request = SearchRequest(query_terms("Lola"))
    owner_hits = await gw.gateway.memory.search(request, MemoryScope.everything())
    result = await calls(worker, fake, "bob", "gsv__MemoryGet", {"ref": owner_hits[0]["ref"]})
    assert result.startswith("Error") and "no memory" in result and "Lola" not in result


@pytest.mark.parametrize("worker", ["main"], indirect=True)
async def test_under_dm_scope_main_a_guest_finds_nothing(
    worker: Worker, fake: FakeProvider
) -> None:
    """Guests share the owner's main session there: memory gives them nothing at all."""
    await said(worker, "alice", "the alarm code is 2580")
    await said(worker, "bob", "what is the alarm code")
    text = await calls(worker, fake, "bob", "gsv__MemorySearch", {"query": "alarm code"})
    found = json.loads(text)
    assert found == {"results": [], "count": 0, "searched": "nothing"}


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ({"query": ""}, "query"),
        ({"query": "?!"}, "no words"),
        ({"query": "x", "scope": "everyone"}, "scope"),
        ({"query": "x", "since": "last tuesday"}, "since 'last tuesday' is not a time"),
        ({"query": "x", "since": "1d", "until": "2d"}, "since is after until"),
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": "x", "extra": 1}, "extra"),
    ],
)
async def test_bad_search_arguments_are_told_to_the_model(
    client: GatewayClient, log: EventLog, fake: FakeProvider, args: dict, said: str
) -> None:
    """Each bad argument is an error result naming the problem."""
    fake.enqueue(call("gsv__MemorySearch", args))
    await log.ended((await send(client, "go"))["runId"])
    [text] = tool_results(fake)
    assert text.startswith("Error") and said in text


@pytest.mark.parametrize("ref", ["42", "m:abc", "m:1 OR 1=1", "n:999999"])
async def test_bad_refs_are_told_to_the_model(
    client: GatewayClient, log: EventLog, fake: FakeProvider, ref: str
) -> None:
    """A ref that is no ref, or names nothing, is an error result."""
    fake.enqueue(call("gsv__MemoryGet", {"ref": ref}))
    await log.ended((await send(client, "go"))["runId"])
    [text] = tool_results(fake)
    assert text.startswith("Error") and ("not a memory ref" in text or "no memory" in text)


def ctx(key: str, context: dict[str, Any] | None = None) -> ToolCallContext:
    return ToolCallContext(key, "main", "r", "c", channel_context=context)


def test_a_group_session_sees_its_own_conversation_even_for_the_owner() -> None:
    """A group's session is its members' conversation: only it, never notes."""
    routing = RoutingSettings()
    key = "agent:main:telegram:group:-100"
    owner = {"channel": "telegram", "authority": "owner", "peer": {"kind": "group", "id": "-100"}}
    scope = memory_scope(ctx(key, owner), None, routing)
    assert (scope.notes, scope.sessions) == (False, frozenset({key}))


def test_a_sub_agent_searches_as_the_run_that_started_it() -> None:
    """A sub-agent of a group session gets the group's scope; of a client run, everything."""
    routing = RoutingSettings()
    group = "agent:main:slack:channel:c1"
    child = ctx("agent:main:spawn:abc")
    origin = SpawnOrigin(group, {"channel": "slack", "authority": "owner"}, "task")
    assert memory_scope(child, origin, routing).sessions == frozenset({group})
    client_origin = SpawnOrigin("agent:main:cli:dm:main", None, "task")
    assert memory_scope(child, client_origin, routing).sessions is None
    assert memory_scope(child, None, routing).sessions is None


def test_cron_and_heartbeat_runs_see_everything() -> None:
    """The system's runs are the owner's schedule."""
    scope = memory_scope(
        ctx("agent:main:cron:job:run", {"cron": {"id": "j"}}), None, RoutingSettings()
    )
    assert scope == scope.everything()


async def test_a_sub_agent_of_a_group_session_finds_that_group_only(
    client: GatewayClient, log: EventLog, fake: FakeProvider
) -> None:
    """A group's session, even the owner's run in it, and its sub-agent see the group's
    conversation only: not another session, not a note."""
    group = "agent:main:mychat:group:g1"
    await client.call("workspace.write", {"path": "MEMORY.md", "content": "otter in the notes\n"})
    await log.ended((await send(client, "otter elsewhere", key="agent:main:dm:zed"))["runId"])
    await log.ended((await send(client, "the group's otter", key=group))["runId"])
    fake.enqueue(call("gsv__Spawn", {"task": "look for otters"}))
    fake.enqueue(call("gsv__MemorySearch", {"query": "otter"}))
    fake.enqueue("child done")
    fake.enqueue("done")
    before = len(tool_results(fake))
    await log.ended((await send(client, "ask a helper", key=group))["runId"])
    found = json.loads(tool_results(fake)[before])
    assert found["searched"] == "this conversation only"
    assert {h["sessionKey"] for h in found["results"]} == {group}
