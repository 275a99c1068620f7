"""cron.* over a real gateway: lifecycle, validation, real run outcomes, limits."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from gsv_core.client import GatewayClient
from gsv_core.errors import Conflict
from gsv_core.errors import InvalidParams
from gsv_core.errors import NotFound
from gsv_core.errors import ProviderFailed
from gsv_core.errors import RateLimited
from gsv_core.gateway.server import RunningGateway
from tests.cron.conftest import HOUR
from tests.cron.conftest import START
from tests.cron.conftest import Clock
from tests.cron.conftest import eventually
from tests.cron.conftest import task_job
from tests.fakes.provider import Fail
from tests.fakes.provider import FakeProvider


async def add(client: GatewayClient, doc: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = await client.call("cron.add", doc)
    assert result["ok"] is True
    return result["job"]


async def run(client: GatewayClient, job_id: str | None = None, mode: str = "force") -> Any:
    params: dict[str, Any] = {"mode": mode}
    if job_id is not None:
        params["id"] = job_id
    return await client.call("cron.run", params)


async def history(client: GatewayClient, job_id: str) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = (await client.call("cron.runs", {"jobId": job_id}))["runs"]
    return runs


async def test_job_lifecycle(client: GatewayClient) -> None:
    """add -> list -> update -> remove, with the seed shapes and next runs computed."""
    job = await add(client, {"name": " morning ", "agentId": "Ops",
                             "schedule": {"kind": "cron", "expr": "0 9 * * *", "tz": "Europe/Madrid"},
                             "spec": {"mode": "systemEvent", "text": "good morning"}})  # fmt: skip
    assert job["name"] == "morning" and job["agentId"] == "ops" and job["enabled"] is True
    assert job["createdAtMs"] == START and job["deleteAfterRun"] is False
    assert job["state"] == {"nextRunAtMs": START + 14 * HOUR}  # 09:00 CET tomorrow = 08:00Z
    listed = await client.call("cron.list", {})
    assert listed["count"] == 1 and listed["jobs"][0]["id"] == job["id"]
    assert (await client.call("cron.list", {"agentId": "main"}))["count"] == 0
    updated = (await client.call("cron.update", {"id": job["id"], "patch": {
        "schedule": {"kind": "every", "everyMs": HOUR}, "description": "hourly now"}}))["job"]  # fmt: skip
    assert updated["schedule"] == {"kind": "every", "everyMs": HOUR, "anchorMs": START}
    assert (
        updated["state"]["nextRunAtMs"] == START + HOUR and updated["description"] == "hourly now"
    )
    disabled = await client.call("cron.update", {"id": job["id"], "patch": {"enabled": False}})
    assert disabled["job"]["state"] == {} and disabled["job"]["enabled"] is False
    assert (await client.call("cron.list", {"includeDisabled": False}))["count"] == 0
    status = await client.call("cron.status")
    assert status == {"enabled": True, "count": 1, "dueCount": 0, "runningCount": 0,
                      "maxJobs": 200, "maxConcurrentRuns": 4}  # fmt: skip
    assert await client.call("cron.remove", {"id": job["id"]}) == {"ok": True, "removed": True}
    assert await client.call("cron.remove", {"id": job["id"]}) == {"ok": True, "removed": False}
    assert (await client.call("cron.list", {}))["count"] == 0


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"schedule": {"kind": "at", "atMs": START}, "spec": {"mode": "task", "message": "x"}}, "name"),
        ({"name": "x", "schedule": {"kind": "cron", "expr": "* * *"},
          "spec": {"mode": "task", "message": "x"}}, "schedule.expr"),
        ({"name": "x", "schedule": {"kind": "at", "atMs": START - 2 * HOUR},
          "spec": {"mode": "task", "message": "x"}}, "schedule.atMs is in the past"),
        ({"name": "x", "schedule": {"kind": "at", "atMs": START},
          "spec": {"mode": "task", "message": " "}}, "spec.message"),
        ({"name": "x", "schedule": {"kind": "at", "atMs": START}, "spec": "run"}, "spec"),
        ({"name": "x", "schedule": {"kind": "cron", "expr": "0 9 * * *", "tz": "Nowhere/City"},
          "spec": {"mode": "task", "message": "x"}}, "schedule.tz"),
    ],
)  # fmt: skip
async def test_bad_jobs_are_400s_naming_the_field(
    client: GatewayClient, params: dict[str, Any], field: str
) -> None:
    """cron.add refuses bad input with a 400 whose message names the field."""
    with pytest.raises(InvalidParams, match=field):
        await client.call("cron.add", params)


async def test_unknown_ids_are_404s_and_bad_run_params_400s(client: GatewayClient) -> None:
    """update / run / runs of an unknown id are 404; force without id and bad modes 400."""
    with pytest.raises(NotFound, match="unknown cron job id: nope"):
        await client.call("cron.update", {"id": "nope", "patch": {"name": "x"}})
    with pytest.raises(NotFound):
        await run(client, "nope")
    with pytest.raises(NotFound):
        await client.call("cron.runs", {"jobId": "nope"})
    with pytest.raises(InvalidParams, match="requires id"):
        await run(client)
    with pytest.raises(InvalidParams, match="mode"):
        await client.call("cron.run", {"mode": "later"})
    with pytest.raises(InvalidParams, match="limit"):
        await client.call("cron.runs", {"limit": 0})


async def test_a_task_run_ends_ok_with_its_summary_in_a_fresh_session(
    client: GatewayClient, fake: FakeProvider
) -> None:
    """Each task run has its own session; the result is the reply, with model and thinking
    (the original ignored both)."""
    job = await add(client, task_job(model="fake/special-model", thinking="high"))
    fake.enqueue("The report is ready: ", "all systems nominal.")
    first = await run(client, job["id"])
    assert first["ran"] == 1
    result = first["results"][0]
    assert result["status"] == "ok"
    assert result["sessionKey"].startswith(f"agent:main:cron:{job['id']}:")
    # a forced run's summary names where it ran, as the original's did; history keeps the reply
    reply = "The report is ready: all systems nominal."
    assert result["summary"] == f"ran in {result['sessionKey']}: {reply}"
    request = fake.requests[-1]
    assert request.model == "special-model" and request.thinking == "high"
    assert len(request.messages) == 1 and "report: do it" in str(request.messages[0]["content"])
    fake.enqueue("x" * 500)
    second = (await run(client, job["id"]))["results"][0]
    assert second["sessionKey"] != result["sessionKey"]
    assert len(fake.requests[-1].messages) == 1  # no carry-over from the first run
    runs = await history(client, job["id"])
    assert len(runs[0]["summary"]) == 200 and runs[0]["summary"].endswith("…")
    assert [r["status"] for r in runs] == ["ok", "ok"] and runs[0]["id"] > runs[1]["id"]
    assert runs[1]["summary"] == reply and runs[1]["ts"] == START


async def test_a_failing_run_ends_error_with_the_message(
    client: GatewayClient, fake: FakeProvider
) -> None:
    """A model failure makes the run `error` with its message, in the job and the history."""
    job = await add(client, {**task_job(), "schedule": {"kind": "every", "everyMs": HOUR}})
    fake.enqueue(Fail(ProviderFailed("the model is down")))
    result = (await run(client, job["id"]))["results"][0]
    assert result["status"] == "error" and result["error"] == "the model is down"
    assert result["nextRunAtMs"] == START + HOUR
    state = (await client.call("cron.list", {}))["jobs"][0]["state"]
    assert state["lastStatus"] == "error" and state["lastError"] == "the model is down"
    assert "runningAtMs" not in state
    assert (await history(client, job["id"]))[0]["error"] == "the model is down"


async def test_a_system_event_goes_into_the_main_session(
    client: GatewayClient, fake: FakeProvider
) -> None:
    """systemEvent text arrives in agent:main:main as a cron message; its reply is the summary."""
    job = await add(client, {"name": "nudge", "schedule": {"kind": "every", "everyMs": HOUR},
                             "spec": {"mode": "systemEvent", "text": "check the inbox"}})  # fmt: skip
    fake.enqueue("Inbox is empty.")
    result = (await run(client, job["id"]))["results"][0]
    assert result == {"jobId": job["id"], "status": "ok",
                      "summary": "ran in agent:main:main: Inbox is empty.",
                      "durationMs": 0, "nextRunAtMs": START + HOUR,
                      "sessionKey": "agent:main:main",
                      "reply": "kept in agent:main:main: no channel conversation to deliver "
                               "to yet"}  # fmt: skip
    preview = await client.call("session.preview", {"sessionKey": "agent:main:main"})
    text = str(preview["messages"][0]["content"])
    assert text.startswith('[cron "nudge" · Friday, February 13, 2026 — 6:00 PM UTC]')
    assert "check the inbox" in text


async def test_a_task_that_outlasts_its_timeout_is_stopped(
    client: GatewayClient, fake: FakeProvider
) -> None:
    """timeoutSeconds bounds the run: it is stopped and the run ends `error` (the original ignored it)."""
    job = await add(client, task_job(timeoutSeconds=0.2))
    fake.enqueue("thinking", asyncio.Event())  # never answers
    result = (await run(client, job["id"]))["results"][0]
    assert result["status"] == "error" and "timed out after 0.2s" in result["error"]
    stats = await client.call("session.stats", {"sessionKey": result["sessionKey"]})
    assert stats["isProcessing"] is False


async def test_one_shot_jobs_are_disabled_or_deleted_after_running(
    client: GatewayClient, fake: FakeProvider, clock: Clock
) -> None:
    """An `at` job that ran is disabled; with deleteAfterRun it is removed after success."""
    kept = await add(client, task_job("kept"))
    gone = await add(client, {**task_job("gone"), "deleteAfterRun": True})
    clock.advance(HOUR)
    fake.enqueue("one")
    fake.enqueue("two")
    results = (await run(client, mode="due"))["results"]
    assert sorted(r["status"] for r in results) == ["ok", "ok"]
    jobs = (await client.call("cron.list", {}))["jobs"]
    assert [j["id"] for j in jobs] == [kept["id"]] and jobs[0]["enabled"] is False
    assert "nextRunAtMs" not in jobs[0]["state"] and jobs[0]["state"]["lastStatus"] == "ok"
    assert [r["status"] for r in await history(client, gone["id"])] == ["ok"]


async def test_due_mode_runs_only_due_enabled_jobs(
    client: GatewayClient, fake: FakeProvider, clock: Clock
) -> None:
    """By id, `due` skips a job not due yet or disabled (with the reason); force runs it."""
    job = await add(client, task_job())
    early = await run(client, job["id"], "due")
    assert early["ran"] == 0 and early["results"][0]["status"] == "skipped"
    assert "not due" in early["results"][0]["error"]
    await client.call("cron.update", {"id": job["id"], "patch": {"enabled": False}})
    clock.advance(2 * HOUR)
    skipped = (await run(client, job["id"], "due"))["results"][0]
    assert skipped["status"] == "skipped" and skipped["error"] == "job disabled"
    assert (await history(client, job["id"]))[0]["status"] == "skipped"
    assert (await run(client, mode="due"))["ran"] == 0


async def test_cron_disabled_stops_the_scheduler_but_not_force(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, clock: Clock
) -> None:
    """With cron.enabled false nothing due runs (timer or due mode); force still does."""
    await client.call("config.set", {"path": "cron.enabled", "value": False})
    job = await add(client, task_job())
    clock.advance(2 * HOUR)
    gw.gateway.cron.wake()
    assert (await run(client, mode="due")) == {"ok": True, "ran": 0, "results": []}
    refused = (await run(client, job["id"], "due"))["results"][0]
    assert refused["error"] == "cron scheduler disabled"
    assert (await client.call("cron.status"))["enabled"] is False
    fake.enqueue("forced")
    assert (await run(client, job["id"]))["results"][0]["summary"].endswith(": forced")


async def test_the_timer_runs_due_jobs_on_their_grid(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, clock: Clock
) -> None:
    """When the clock passes a job's time the timer runs it; the next run keeps the grid."""
    job = await add(client, {**task_job(), "schedule": {"kind": "every", "everyMs": HOUR}})
    clock.advance(HOUR + 17 * 60_000)  # late: the next run stays on the hour grid
    fake.enqueue("tick")
    gw.gateway.cron.wake()
    runs = await eventually(lambda: history(client, job["id"]), "the timer to run the job")
    assert runs[0]["status"] == "ok" and runs[0]["nextRunAtMs"] == START + 2 * HOUR
    state = (await client.call("cron.list", {}))["jobs"][0]["state"]
    assert state["nextRunAtMs"] == START + 2 * HOUR and state["lastRunAtMs"] == clock.now


async def test_limits_on_jobs_and_history(client: GatewayClient, fake: FakeProvider) -> None:
    """cron.maxJobs refuses the next add (409); history keeps maxRunsPerJobHistory runs."""
    await client.call("config.set", {"path": "cron.maxJobs", "value": 1})
    await client.call("config.set", {"path": "cron.maxRunsPerJobHistory", "value": 2})
    job = await add(client, {**task_job(), "schedule": {"kind": "every", "everyMs": HOUR}})
    with pytest.raises(Conflict, match=r"cron\.maxJobs is 1"):
        await add(client, task_job("second"))
    for _ in range(3):
        await run(client, job["id"])
    assert (await client.call("cron.runs", {"jobId": job["id"]}))["count"] == 2


async def test_concurrent_runs_are_limited(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, clock: Clock
) -> None:
    """Beyond cron.maxConcurrentRuns a forced run is refused (429) and a due job waits
    for a free slot, then runs."""
    await client.call("config.set", {"path": "cron.maxConcurrentRuns", "value": 1})
    slow = await add(client, task_job("slow"))
    waiting = await add(client, task_job("waiting"))
    gate = asyncio.Event()
    fake.enqueue("working", gate)
    fake.enqueue("waited")
    first = asyncio.create_task(run(client, slow["id"]))
    await eventually(lambda: fake.streaming.is_set(), "the slow run to start")
    clock.advance(HOUR)  # `waiting` is due now, but the one slot is taken
    gw.gateway.cron.wake()
    status = await client.call("cron.status")
    assert status["runningCount"] == 1 and status["dueCount"] == 1
    with pytest.raises(RateLimited, match=r"cron\.maxConcurrentRuns"):
        await run(client, waiting["id"])
    assert (await run(client, mode="due"))["ran"] == 0
    gate.set()
    assert (await first)["results"][0]["status"] == "ok"
    runs = await eventually(lambda: history(client, waiting["id"]), "the waiting job to run")
    assert runs[0]["status"] == "ok" and runs[0]["summary"] == "waited"


async def test_forcing_a_job_that_is_running_reports_that_run(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, clock: Clock
) -> None:
    """cron.run force while the scheduler runs the job: the answer waits for that run and
    reports it (ran 1), as the original did, instead of "already running"."""
    gate = asyncio.Event()
    job = await add(client, task_job("slow"))
    fake.enqueue("slow answer", gate)
    clock.advance(HOUR)
    gw.gateway.cron.wake()
    await eventually(lambda: gw.gateway.cron.running_session(job["id"]), "the scheduled run")
    # the force arrives while the run is going (called in process: no timing involved)
    forced = asyncio.create_task(gw.gateway.cron.run(job["id"], "force"))
    await asyncio.sleep(0)
    gate.set()
    (result,) = await forced
    assert result["status"] == "ok" and result["summary"].endswith(": slow answer")
    assert len(fake.requests) == 1  # the run already going, not a second one
