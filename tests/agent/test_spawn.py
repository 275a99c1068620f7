"""Sub-agents (gsv__Spawn) on a real gateway with the scripted model: the task runs in a
fresh spawn session with only the tools it was given and its answer comes back; two
spawns in one step run at the same time; stopping the parent stops the children; a
sub-agent cannot spawn or call a tool it was not given; its spend is the parent's source."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from gsv_core.client import GatewayClient
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.waiting import until

SPAWN = "gsv__Spawn"


def results(fake: FakeProvider, index: int) -> list[dict[str, Any]]:
    return [m for m in fake.requests[index].messages if m["role"] == "toolResult"]


def payload(result: dict[str, Any]) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(result["content"][0]["text"])
    return parsed


async def test_a_sub_agent_answers_with_only_its_tools(
    client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    fake.enqueue(call(SPAWN, {"task": "What is 2 + 2?", "tools": ["gsv__ConfigGet"]}))
    fake.enqueue("4")  # the sub-agent
    fake.enqueue("The sub-agent says 4.")
    run = (await send(client, "ask a helper"))["runId"]
    assert (await log.ended(run))["state"] == "final"
    child = fake.requests[1]
    # an on-demand tool named for it is offered from its first step; no gsv__Spawn; the
    # search stays (finding is not calling), but its prompt names no tool it may not call
    assert [t.name for t in child.tools] == ["gsv__ConfigGet", "gsv__ToolSearch"]
    assert "found with gsv__ToolSearch" not in child.system
    assert child.messages[-1]["content"] == "What is 2 + 2?"  # a fresh session: no history
    answer = payload(results(fake, 2)[0])
    assert answer["answer"] == "4" and answer["sessionKey"].startswith("agent:main:spawn:")
    assert answer["usage"]["input"] == 10
    stats = await client.call("session.get", {"sessionKey": answer["sessionKey"]})
    assert stats["kind"] == "spawn"
    ledger = await client.call("usage.get", {"groupBy": "source"})
    assert {g["name"]: g["calls"] for g in ledger["groups"]} == {"chat": 3}  # parent's source


async def test_two_spawns_in_one_step_run_at_the_same_time(
    client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    both_started = asyncio.Event()
    fake.enqueue(call(SPAWN, {"task": "first"}), call(SPAWN, {"task": "second"}))
    fake.enqueue("one, after the other started", both_started)  # waits for its sibling
    fake.enqueue("two")
    fake.enqueue("Both done.")
    run = (await send(client, "split the work"))["runId"]
    await until(lambda: len(fake.requests) >= 3, "both sub-agents calling the model")
    both_started.set()  # run one after the other, the second would never have asked
    assert (await log.ended(run))["state"] == "final"
    answers = sorted(payload(r)["answer"] for r in results(fake, 3))
    assert answers == ["one, after the other started", "two"]


async def test_stopping_the_parent_stops_its_children(
    client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    never = asyncio.Event()
    fake.enqueue(call(SPAWN, {"task": "take forever"}))
    fake.enqueue("working", never)
    run = (await send(client, "start a long job"))["runId"]
    await until(lambda: len(fake.requests) >= 2, "the sub-agent working")
    child_key = next(k for k in await _session_keys(client) if ":spawn:" in k)
    await client.call("chat.send", {"sessionKey": "agent:main:main", "message": "/stop"})
    assert (await log.ended(run))["state"] in ("error", "final", "stopped")

    async def child_idle() -> bool:
        stats = await client.call("session.stats", {"sessionKey": child_key})
        return not stats["isProcessing"]

    await until(child_idle, "the sub-agent to stop")


async def test_a_sub_agent_cannot_use_tools_it_was_not_given(
    client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    fake.enqueue(call(SPAWN, {"task": "try things", "tools": ["gsv__ConfigGet"]}))
    fake.enqueue(call("gsv__WebFetch", {"url": "http://example.com/"}))  # not given
    fake.enqueue(call(SPAWN, {"task": "recurse"}))  # no sub-agent spawns
    fake.enqueue("Could not.")
    fake.enqueue("Done.")
    run = (await send(client, "go"))["runId"]
    assert (await log.ended(run))["state"] == "final"
    refused = [r for i in (2, 3) for r in results(fake, i)][-2:]
    assert all(r["isError"] for r in refused)
    assert "not one of the tools this run was given" in refused[0]["content"][0]["text"]
    assert "not one of the tools this run was given" in refused[1]["content"][0]["text"]


async def test_bad_spawn_arguments_are_explained_to_the_model(
    client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    fake.enqueue(call(SPAWN, {"task": "x", "model": "no-slash", "timeoutSeconds": 1}))
    fake.enqueue("Sorry.")
    run = (await send(client, "go"))["runId"]
    assert (await log.ended(run))["state"] == "final"
    (result,) = results(fake, 1)
    assert result["isError"] and "model" in result["content"][0]["text"]
    assert "timeoutSeconds" in result["content"][0]["text"]


async def _session_keys(client: GatewayClient) -> list[str]:
    listed = await client.call("sessions.list", {"limit": 50})
    return [s["sessionKey"] for s in listed["sessions"]]


async def test_spawns_beyond_the_limit_wait_their_turn(
    client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """agents.maxConcurrentSpawns 1: the second sub-agent's session is not even made
    while the first works; it runs once the first is done."""
    await client.call("config.set", {"path": "agents.maxConcurrentSpawns", "value": 1})
    release = asyncio.Event()
    fake.enqueue(call(SPAWN, {"task": "first"}), call(SPAWN, {"task": "second"}))
    fake.enqueue("one", release)
    fake.enqueue("two")
    fake.enqueue("Both done.")
    run = (await send(client, "split the work"))["runId"]
    await until(lambda: len(fake.requests) >= 2, "the first sub-agent working")
    spawned = [k for k in await _session_keys(client) if ":spawn:" in k]
    assert len(spawned) == 1 and len(fake.requests) == 2  # the second waits for a slot
    release.set()
    assert (await log.ended(run))["state"] == "final"
    assert sorted(payload(r)["answer"] for r in results(fake, 3)) == ["one", "two"]


async def test_a_yes_in_the_parent_conversation_answers_its_sub_agents_approval(
    client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """A client's run: the sub-agent's prompt (its own session's `paused` event, with no
    channel to relay it to) says it is a sub-agent's; another message to the parent's
    session is queued with the reminder of it, and "yes" there answers it, as it would
    the parent's own approval."""
    rules = {"rules": [{"tool": "gsv__ConfigGet", "decision": "ask"}]}
    await client.call("config.set", {"path": "toolApproval", "value": rules})
    fake.enqueue(call(SPAWN, {"task": "Read the model id", "tools": ["gsv__ConfigGet"]}))
    fake.enqueue(call("gsv__ConfigGet", {"path": "model.id"}))
    fake.enqueue("It is set.")
    fake.enqueue("The helper read it.")
    run = (await send(client, "ask a helper"))["runId"]
    await log.wait(lambda: any(p["state"] == "paused" for _, p in _chats(log)), "the prompt")
    paused = next(p for _, p in _chats(log) if p["state"] == "paused")
    assert ":spawn:" in paused["sessionKey"] and "channelContext" not in paused
    text = paused["message"]["content"][0]["text"]
    assert "Asked by a sub-agent working on: Read the model id" in text
    other = await send(client, "what is taking so long?")  # queued, told what waits
    assert other["queued"] is True and other["approvalId"] == paused["approvalId"]
    answered = await send(client, "yes")
    assert answered["response"] == "Approved gsv__ConfigGet."
    assert answered["approvalId"] == paused["approvalId"]
    assert (await log.ended(run))["state"] == "final"
    assert payload(results(fake, 3)[0])["answer"] == "It is set."
    assert (await log.ended(other["runId"]))["state"] == "final"


def _chats(log: EventLog) -> list[tuple[str, dict[str, Any]]]:
    return [(name, p) for name, p in log.events if name == "chat"]
