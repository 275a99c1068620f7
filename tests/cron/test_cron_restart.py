"""Jobs survive a gateway restart; what was missed while it was down runs once."""

from __future__ import annotations

import asyncio
from pathlib import Path

from gsv_core.client import GatewayClient
from gsv_core.gateway.server import serve
from tests.cron.conftest import HOUR
from tests.cron.conftest import START
from tests.cron.conftest import Clock
from tests.cron.conftest import eventually
from tests.cron.conftest import server_config
from tests.cron.conftest import task_job
from tests.fakes.provider import FakeProvider


async def test_a_restart_keeps_jobs_and_fires_missed_ones_once(
    database: Path, fake: FakeProvider, clock: Clock
) -> None:
    """Down for five hours: an hourly job and a one-shot each run once at start-up."""
    async with (
        serve(server_config(database, fake, clock), port=0) as gw,
        GatewayClient(gw.url, token=gw.token) as client,
    ):
        hourly = (await client.call("cron.add", {**task_job("hourly"),
                  "schedule": {"kind": "every", "everyMs": HOUR}}))["job"]  # fmt: skip
        once = (await client.call("cron.add", task_job("once")))["job"]
    clock.advance(5 * HOUR)
    async with (
        serve(server_config(database, fake, clock), port=0) as gw,
        GatewayClient(gw.url, token=gw.token) as client,
    ):

        async def both_ran() -> bool:
            runs = (await client.call("cron.runs", {}))["runs"]
            return len(runs) == 2

        await eventually(both_ran, "the missed jobs to run")
        runs = (await client.call("cron.runs", {}))["runs"]
        assert sorted(r["jobId"] for r in runs) == sorted([hourly["id"], once["id"]])
        assert all(r["status"] == "ok" and r["ts"] == START + 5 * HOUR for r in runs)
        jobs = {j["id"]: j for j in (await client.call("cron.list", {}))["jobs"]}
        assert jobs[hourly["id"]]["state"]["nextRunAtMs"] == START + 6 * HOUR
        assert jobs[once["id"]]["enabled"] is False
        gw.gateway.cron.wake()  # nothing else is due: still two runs
        status = await client.call("cron.status")
        assert status["dueCount"] == 0 and status["count"] == 2
        assert (await client.call("cron.runs", {}))["count"] == 2


async def test_a_run_cut_short_by_a_shutdown_is_recorded_as_interrupted(
    database: Path, fake: FakeProvider, clock: Clock
) -> None:
    """A run in flight at shutdown is an `error` after the restart, and is not repeated."""
    fake.enqueue("working", asyncio.Event())  # never finishes
    async with (
        serve(server_config(database, fake, clock), port=0) as gw,
        GatewayClient(gw.url, token=gw.token) as client,
    ):
        job = (await client.call("cron.add", {**task_job(),
               "schedule": {"kind": "every", "everyMs": HOUR}}))["job"]  # fmt: skip
        pending = asyncio.create_task(client.call("cron.run", {"id": job["id"], "mode": "force"}))
        await eventually(fake.streaming.is_set, "the run to start")
        assert (await client.call("cron.status"))["runningCount"] == 1
    pending.cancel()
    await asyncio.gather(pending, return_exceptions=True)
    async with (
        serve(server_config(database, fake, clock), port=0) as gw,
        GatewayClient(gw.url, token=gw.token) as client,
    ):
        runs = (await client.call("cron.runs", {"jobId": job["id"]}))["runs"]
        assert [r["status"] for r in runs] == ["error"]
        assert "interrupted" in runs[0]["error"]
        state = (await client.call("cron.list", {}))["jobs"][0]["state"]
        assert "runningAtMs" not in state and state["nextRunAtMs"] == START + HOUR


TOOLS = [{"name": "Bash", "description": "run", "inputSchema": {"type": "object"}}]


async def test_missed_jobs_wait_for_the_nodes_that_were_connected(
    database: Path, fake: FakeProvider, clock: Clock
) -> None:
    """A job that fell due while the gateway was down runs after the nodes connected before
    the stop are back, not before (its tools would fail)."""
    from tests.wire import handshake
    from tests.wire import open_raw

    async with serve(server_config(database, fake, clock), port=0) as gw:
        async with GatewayClient(gw.url, token=gw.token) as client:
            await client.call("cron.add", task_job("once"))
        node = await open_raw(gw.url)
        await handshake(node, mode="node", client_id="box", tools=TOOLS)
    await node.close()
    clock.advance(5 * HOUR)
    async with (
        serve(server_config(database, fake, clock), port=0) as gw,
        GatewayClient(gw.url, token=gw.token) as client,
    ):
        await asyncio.sleep(0.3)
        gw.gateway.cron.wake()
        await asyncio.sleep(0.1)
        assert (await client.call("cron.runs", {}))["count"] == 0  # held for the node
        async with await open_raw(gw.url) as back:
            await handshake(back, mode="node", client_id="box", tools=TOOLS)

            async def ran() -> bool:
                return bool((await client.call("cron.runs", {}))["count"])

            await eventually(ran, "the held job to run once its node is back")


async def test_missed_jobs_run_after_the_grace_when_a_node_stays_away(
    database: Path, fake: FakeProvider, clock: Clock
) -> None:
    from tests.wire import handshake
    from tests.wire import open_raw

    async with serve(server_config(database, fake, clock), port=0) as gw:
        async with GatewayClient(gw.url, token=gw.token) as client:
            await client.call("cron.add", task_job("once"))
        node = await open_raw(gw.url)
        await handshake(node, mode="node", client_id="gone", tools=TOOLS)
    await node.close()
    clock.advance(5 * HOUR)
    async with (
        serve(server_config(database, fake, clock), port=0) as gw,
        GatewayClient(gw.url, token=gw.token) as client,
    ):
        await asyncio.sleep(0.2)
        assert (await client.call("cron.runs", {}))["count"] == 0
        clock.advance(60_000)  # cron.catchUpGraceMs
        gw.gateway.cron.wake()

        async def ran() -> bool:
            return bool((await client.call("cron.runs", {}))["count"])

        await eventually(ran, "the held job to run after the grace")
