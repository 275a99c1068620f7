"""gsv__Cron driven by the (scripted) model: every action, friendly schedule forms."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from tests.agent.conftest import EventLog
from tests.cron.conftest import HOUR
from tests.cron.conftest import START
from tests.fakes.provider import Call
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call

MAIN = "agent:main:main"


@pytest.fixture
async def log(client: GatewayClient) -> AsyncIterator[EventLog]:
    events = EventLog(client)
    yield events
    await events.close()


@pytest.fixture(autouse=True)
async def owner_allows_cron(client: GatewayClient) -> None:
    """These tests are about the tool, not its prompt: the owner's rule lets gsv__Cron
    change jobs unasked (without it add, update, remove and run ask, docs/approvals.md)."""
    rule = {"id": "cron", "tool": "gsv__Cron", "decision": "allow"}
    await client.call("config.set", {"path": "toolApproval.rules", "value": [rule]})


async def tool_turn(
    gw: RunningGateway,
    client: GatewayClient,
    fake: FakeProvider,
    log: EventLog,
    *calls: Call,
    inner: tuple[str, ...] = (),
) -> list[Any]:
    """One chat message whose model turn makes `calls` (while they run, other sessions'
    turns answer `inner`); returns the tools' results, parsed (errors as their text)."""
    fake.enqueue(*calls)
    for reply in inner:
        fake.enqueue(reply)
    fake.enqueue("done")
    sent = await client.call("chat.send", {"sessionKey": MAIN, "message": "cron please"})
    assert (await log.ended(sent["runId"]))["state"] == "final"
    history = await gw.gateway.sessions.store.messages(MAIN)
    ids = {c.id for c in calls}
    results = [m for m in history if m.get("role") == "toolResult" and m["toolCallId"] in ids]
    texts = [r["content"][0]["text"] for r in results]
    return [t if t.startswith("Error:") else json.loads(t) for t in texts]


async def test_the_model_manages_jobs_with_every_action(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """add (flat and job object), list, status, update, run, runs and remove all work."""
    added, listed, status = await tool_turn(gw, client, fake, log,
        call("gsv__Cron", {"action": "add", "name": "digest",
                           "schedule": {"kind": "at", "at": "tomorrow 9am"},
                           "spec": {"mode": "task", "message": "write the digest"}}),
        call("gsv__Cron", {"action": "list"}),
        call("gsv__Cron", {"action": "status"}))  # fmt: skip
    job = added["job"]
    assert job["agentId"] == "main" and job["schedule"] == {"kind": "at", "atMs": START + 15 * HOUR}
    assert job["scheduleText"] == "once at 2026-02-14 09:00 UTC"
    assert listed["count"] == 1 and listed["timezone"] == "UTC"
    assert listed["currentTime"] == "2026-02-13T18:00:00+00:00"
    assert listed["jobs"][0]["nextRunText"] == "2026-02-14 09:00 UTC"
    assert status["count"] == 1 and status["runningCount"] == 0

    updated, ran, runs = await tool_turn(gw, client, fake, log,
        call("gsv__Cron", {"action": "update", "id": job["id"],
                           "patch": {"schedule": {"everyHours": 6}}}),
        call("gsv__Cron", {"action": "run", "id": job["id"], "mode": "force"}),
        call("gsv__Cron", {"action": "runs", "jobId": job["id"]}),
        inner=("Digest: nothing new.",))  # fmt: skip
    assert updated["job"]["schedule"] == {"kind": "every", "everyMs": 6 * HOUR, "anchorMs": START}
    assert updated["job"]["scheduleText"].startswith("every 6 hours")
    assert ran["ran"] == 1 and ran["results"][0]["status"] == "ok"
    assert ran["results"][0]["summary"] == "Digest: nothing new."
    assert runs["count"] == 1 and runs["runs"][0]["summary"] == "Digest: nothing new."

    second, removed, bad = await tool_turn(gw, client, fake, log,
        call("gsv__Cron", {"action": "add", "agentId": "helper", "job": {
            "name": "ping", "schedule": {"kind": "cron", "expr": "0 8 * * 1-5"},
            "spec": {"mode": "systemEvent", "text": "good morning"}}}),
        call("gsv__Cron", {"action": "remove", "id": job["id"]}),
        call("gsv__Cron", {"action": "update", "patch": {"name": "x"}}))  # fmt: skip
    assert second["job"]["agentId"] == "helper" and second["job"]["schedule"]["tz"] == "UTC"
    assert removed == {"ok": True, "removed": True}
    assert bad == "Error: id is required for this action"
    names = [j["name"] for j in (await client.call("cron.list", {}))["jobs"]]
    assert names == ["ping"]


async def test_bad_tool_input_reads_as_an_error_naming_the_field(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """Unreadable times, unknown ids and missing payloads come back as clear errors."""
    results = await tool_turn(gw, client, fake, log,
        call("gsv__Cron", {"action": "add", "name": "x", "schedule": {"kind": "at", "at": "someday"},
                           "spec": {"mode": "task", "message": "m"}}),
        call("gsv__Cron", {"action": "add"}),
        call("gsv__Cron", {"action": "run", "id": "nope"}),
        call("gsv__Cron", {"action": "explode"}))  # fmt: skip
    assert results[0].startswith("Error: schedule.at: unable to parse datetime 'someday'")
    assert results[1].startswith("Error: add needs job")
    assert results[2] == "Error: unknown cron job id: nope"
    assert results[3].startswith("Error: Invalid arguments: action")


async def test_a_system_event_into_the_calling_session_is_not_awaited(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """Running a system event for one's own main session reports `running` at once (it can
    only start after this turn), then runs."""
    job = (await client.call("cron.add", {"name": "self", "schedule": {"kind": "every",
           "everyMs": HOUR}, "spec": {"mode": "systemEvent", "text": "wake up"}}))["job"]  # fmt: skip
    (ran,) = await tool_turn(gw, client, fake, log,
        call("gsv__Cron", {"action": "run", "id": job["id"], "mode": "force"}))  # fmt: skip
    assert ran["results"] == [{"jobId": job["id"], "status": "running", "sessionKey": MAIN}]

    async def recorded() -> list[dict[str, Any]]:
        return (await client.call("cron.runs", {"jobId": job["id"]}))["runs"]

    from tests.cron.conftest import eventually

    runs = await eventually(recorded, "the system event to be answered")
    assert runs[0]["status"] == "ok"
