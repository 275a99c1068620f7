"""A run whose tools could not run is a failed run, with the reason; a failed one-shot job
is tried again a few times, then stays listed as failed (docs/cron.md)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from gsv_core.client import GatewayClient
from gsv_core.cron.retry import RETRY_DELAYS_MS
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import serve
from tests.agent.test_sessions_live import node
from tests.cron.conftest import HOUR
from tests.cron.conftest import Clock
from tests.cron.conftest import eventually
from tests.cron.conftest import server_config
from tests.cron.conftest import task_job
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call

NO_NODE = "tools failed: box__Bash (No node provides tool: box__Bash)"


def script_missing_node(fake: FakeProvider) -> None:
    """One run: the model calls a tool nobody provides, then says it could not."""
    fake.enqueue(call("box__Bash", {"command": "echo hi"}))
    fake.enqueue("I could not run it.")


async def job_state(client: GatewayClient, job_id: str) -> dict[str, Any]:
    jobs = (await client.call("cron.list", {"includeDisabled": True}))["jobs"]
    job: dict[str, Any] = next(j for j in jobs if j["id"] == job_id)
    return job


async def test_a_run_whose_tool_has_no_node_fails_with_the_reason(
    client: GatewayClient, fake: FakeProvider, clock: Clock
) -> None:
    """The model replied, but its tool never ran: the run is `error`, not `ok`."""
    job = (await client.call("cron.add", task_job("remind")))["job"]
    script_missing_node(fake)
    result = (await client.call("cron.run", {"id": job["id"], "mode": "force"}))["results"][0]
    assert result["status"] == "error" and result["error"] == NO_NODE
    assert result["summary"] == f"ran in {result['sessionKey']}: I could not run it."
    (run,) = (await client.call("cron.runs", {"jobId": job["id"]}))["runs"]
    assert run["status"] == "error" and run["error"] == NO_NODE


async def test_a_tool_that_ran_and_failed_is_the_models_business(
    client: GatewayClient, fake: FakeProvider
) -> None:
    """Bad arguments to a tool that exists (400) do not fail the run: the model saw it."""
    job = (await client.call("cron.add", task_job("lookup")))["job"]
    fake.enqueue(call("gsv__ConfigGet", {"path": 5}))
    fake.enqueue("Done anyway.")
    result = (await client.call("cron.run", {"id": job["id"], "mode": "force"}))["results"][0]
    assert result["status"] == "ok"
    assert result["summary"] == f"ran in {result['sessionKey']}: Done anyway."


async def test_a_tool_that_works_on_a_later_try_does_not_fail_the_run(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, tmp_path: Path
) -> None:
    """The node was not there for the first call; it was for the second: `ok`."""
    (tmp_path / "note.txt").write_text("hello")
    job = (await client.call("cron.add", task_job("read")))["job"]
    node_back = asyncio.Event()
    fake.enqueue(call("n1__Read", {"path": "note.txt"}))
    fake.enqueue(node_back, call("n1__Read", {"path": "note.txt"}))
    fake.enqueue("It says hello.")
    running = asyncio.create_task(client.call("cron.run", {"id": job["id"], "mode": "force"}))
    async with node(gw, tmp_path):
        node_back.set()
        result = (await running)["results"][0]
    assert result["status"] == "ok"
    assert result["summary"] == f"ran in {result['sessionKey']}: It says hello."


async def test_a_failed_one_shot_job_retries_then_stays_listed_as_failed(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, clock: Clock
) -> None:
    """Tried again after each delay of the policy; then disabled, still listed by default
    with its reason; a forced run that works clears it."""
    job = (await client.call("cron.add", task_job("remind")))["job"]
    clock.advance(HOUR)  # due now
    for attempt, delay in enumerate([*RETRY_DELAYS_MS, None], start=1):
        script_missing_node(fake)
        gw.gateway.cron.wake()
        await ran_times(client, job["id"], attempt)
        state = (await job_state(client, job["id"]))["state"]
        assert state["lastStatus"] == "error" and state["retries"] == attempt
        if delay is not None:
            assert state["nextRunAtMs"] == clock.now + delay
            assert state["lastError"] == NO_NODE
            clock.advance(delay)
    stuck = await job_state(client, job["id"])
    assert stuck["enabled"] is False and "nextRunAtMs" not in stuck["state"]
    assert stuck["state"]["lastError"] == f"{NO_NODE} (gave up after 3 retries)"
    enabled_only = {"includeDisabled": False}
    listed = (await client.call("cron.list", enabled_only))["jobs"]  # and the failed one
    assert [j["id"] for j in listed] == [job["id"]]
    fake.enqueue("Reminded.")
    forced = await client.call("cron.run", {"id": job["id"], "mode": "force"})
    assert forced["results"][0]["status"] == "ok"
    state = (await job_state(client, job["id"]))["state"]
    assert state["lastStatus"] == "ok" and "retries" not in state
    assert (await client.call("cron.list", enabled_only))["jobs"] == []


async def ran_times(client: GatewayClient, job_id: str, times: int) -> None:
    async def count() -> bool:
        runs = (await client.call("cron.runs", {"jobId": job_id}))["count"]
        assert runs <= times, "ran more often than scheduled"
        return bool(runs == times)

    await eventually(count, f"run {times} of the job")


async def test_a_one_shot_run_cut_short_by_a_stop_is_retried_after_the_restart(
    database: Path, fake: FakeProvider, clock: Clock
) -> None:
    """The gateway stopped during a one-shot job's run: after the restart the run is
    recorded as interrupted and the job is tried again after the first delay."""
    fake.enqueue("working", asyncio.Event())  # never finishes
    async with (
        serve(server_config(database, fake, clock), port=0) as gw,
        GatewayClient(gw.url, token=gw.token) as client,
    ):
        job = (await client.call("cron.add", task_job("remind")))["job"]
        clock.advance(HOUR)
        gw.gateway.cron.wake()
        await eventually(fake.streaming.is_set, "the run to start")
    async with (
        serve(server_config(database, fake, clock), port=0) as gw,
        GatewayClient(gw.url, token=gw.token) as client,
    ):
        (run,) = (await client.call("cron.runs", {"jobId": job["id"]}))["runs"]
        assert run["status"] == "error" and "interrupted" in run["error"]
        state = await job_state(client, job["id"])
        assert state["enabled"] is True and state["state"]["retries"] == 1
        assert state["state"]["nextRunAtMs"] == clock.now + RETRY_DELAYS_MS[0]
