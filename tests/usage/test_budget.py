"""Budgets on a real gateway: a fresh install caps background work at 1 USD a day; a
reached daily budget answers instead of calling the model; a run that crosses a budget
finishes, and the next background beat skips with reason `budget`; the owner is told once
a day; `/budget` shows and sets (never from a messenger); `gateway.status` reports."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from gsv_core.client import GatewayClient
from gsv_core.errors import InvalidParams
from gsv_core.gateway.server import RunningGateway
from tests.cron.conftest import Clock
from tests.cron.conftest import eventually
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.heartbeat.test_heartbeat_rpc import scheduled_beat
from tests.heartbeat.test_heartbeat_rpc import write_checklist
from tests.usage.test_ledger import chat
from tests.usage.test_ledger import recorded

# every fake call (10 in, 5 out) costs 1.5 USD at this price
DEAR = {"input": 100_000, "output": 100_000}
MODEL = "claude-sonnet-4-20250514"


async def expensive(client: GatewayClient) -> None:
    await client.call("config.set", {"path": "pricing", "value": {MODEL: DEAR}})


async def test_a_fresh_install_caps_background_work_only(client: GatewayClient) -> None:
    budget = (await client.call("gateway.status"))["budget"]
    assert budget["limits"] == {"daily": None, "monthly": None, "background": 1.0}
    assert budget["reached"] == [] and budget["lastNotice"] is None


async def test_a_reached_daily_budget_answers_without_a_model_call(
    client: GatewayClient, fake: FakeProvider
) -> None:
    await expensive(client)
    await client.call("config.set", {"path": "budget.daily", "value": 1})
    fake.enqueue("First answer.")
    await chat(client, "one")  # spends 1.5 of 1
    events = client.events()
    await client.call("chat.send", {"sessionKey": "agent:main:main", "message": "two"})
    async for frame in events:
        payload = frame.payload or {}
        if frame.event == "chat" and payload.get("state") == "error":
            break
    assert "The daily budget of $1.00 is reached ($1.50 spent today)" in payload["error"]
    assert "/budget daily USD, or gsv config set budget.daily USD" in payload["error"]
    assert len(fake.requests) == 1  # no model call for the second message
    status = (await client.call("gateway.status"))["budget"]
    assert status["reached"] == ["daily"] and status["lastNotice"]["budget"] == "daily"


async def test_a_run_that_crosses_the_budget_finishes(
    client: GatewayClient, fake: FakeProvider
) -> None:
    """Checked when a run starts, never in the middle: a tool loop completes."""
    await expensive(client)
    await client.call("config.set", {"path": "budget.daily", "value": 1})
    fake.enqueue(call("gsv__ConfigGet", {"path": "userTimezone"}))
    fake.enqueue("It is UTC.")
    await chat(client, "which timezone?")
    await recorded(client, 2)
    assert len(fake.requests) == 2


async def test_background_beats_skip_once_spent_and_the_owner_is_told_once(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, clock: Clock
) -> None:
    await expensive(client)
    notices: list[dict[str, Any]] = []
    events = client.events()

    async def collect() -> None:
        async for frame in events:
            if frame.event == "session.notice" and frame.payload["kind"] == "budget":
                notices.append(frame.payload)

    collector = asyncio.create_task(collect())
    await write_checklist(client, "- Check the backup.")
    fake.enqueue("The backup failed.")
    first = await scheduled_beat(gw, client, clock)  # spends 1.5 of the 1 USD a day
    assert first["status"] == "ok"
    second = await scheduled_beat(gw, client, clock)
    third = await scheduled_beat(gw, client, clock)
    assert (second["status"], second["skipReason"]) == ("skipped", "budget")
    assert third["skipReason"] == "budget" and len(fake.requests) == 1
    await eventually(lambda: notices, "the budget notice")
    assert len(notices) == 1 and "background budget of $1.00" in notices[0]["text"]
    # interactive work is not held back by the background budget
    fake.enqueue("Hello.")
    await chat(client, "hi")
    assert len(fake.requests) == 2
    collector.cancel()


async def test_slash_budget_shows_and_sets(client: GatewayClient, fake: FakeProvider) -> None:
    shown = await client.call("chat.send", {"sessionKey": "agent:main:main", "message": "/budget"})
    assert "background: limit $1.00, $0.0000 spent by background work today" in shown["response"]
    set_ = await client.call(
        "chat.send", {"sessionKey": "agent:main:main", "message": "/budget daily 5"}
    )
    assert "daily: limit $5.00" in set_["response"]
    config = await client.call("config.get", {"path": "budget.daily"})
    assert config["value"] == 5.0
    off = await client.call(
        "chat.send", {"sessionKey": "agent:main:main", "message": "/budget background off"}
    )
    assert "background: no limit" in off["response"]
    assert fake.requests == []  # commands never call the model


async def test_slash_budget_announces_the_change_to_every_client(
    gw: RunningGateway, client: GatewayClient
) -> None:
    """`/budget daily 5` is a config write like `config.set`: clients hear `config.changed`
    with its path, the one that typed it included (it asked in a chat, not by config.set)."""
    async with GatewayClient(gw.url, token=gw.token) as watcher:
        await client.call(
            "chat.send", {"sessionKey": "agent:main:main", "message": "/budget daily 5"}
        )
        heard = await asyncio.wait_for(_next_config_change(watcher), 5)
        own = await asyncio.wait_for(_next_config_change(client), 5)
    assert heard.payload == {"path": "budget.daily"} and own.payload == heard.payload


async def _next_config_change(client: GatewayClient) -> Any:
    async for frame in client.events():
        if frame.event == "config.changed":
            return frame
    raise AssertionError("the event stream ended")


@pytest.mark.parametrize(
    "args", ["daily", "weekly 5", "daily -1", "daily five", "daily nan", "daily 5 6"]
)
async def test_bad_budget_arguments_are_explained(client: GatewayClient, args: str) -> None:
    reply = await client.call(
        "chat.send", {"sessionKey": "agent:main:main", "message": f"/budget {args}"}
    )
    assert "error" in reply and "/budget" in reply["error"]


@pytest.mark.parametrize("value", [-1, "5", {"usd": 5}, True])
async def test_bad_budget_config_is_refused(client: GatewayClient, value: object) -> None:
    with pytest.raises(InvalidParams, match=r"budget\.daily"):
        await client.call("config.set", {"path": "budget.daily", "value": value})


async def test_cron_jobs_held_by_the_budget_run_once_it_allows(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, clock: Clock
) -> None:
    """Spent: a recurring job skips with status `budget` (one history entry), a one-shot
    job waits instead of being consumed, and runs once the budget is raised."""
    from tests.cron.conftest import HOUR
    from tests.cron.conftest import task_job

    await expensive(client)
    fake.enqueue("Spent it.")
    first = await client.call("cron.add", {**task_job("first")})
    clock.advance(HOUR)
    gw.gateway.cron.wake()
    await recorded(client, 1)  # 1.5 USD of the 1 USD background budget
    reminder = (await client.call("cron.add", {**task_job("reminder"),
                "schedule": {"kind": "at", "atMs": clock.now + 1000}}))["job"]  # fmt: skip
    clock.advance(2000)
    gw.gateway.cron.wake()

    async def held() -> dict[str, Any] | None:
        runs = (await client.call("cron.runs", {"jobId": reminder["id"]}))["runs"]
        return runs[0] if runs else None

    run = await eventually(held, "the reminder held back")
    assert run["status"] == "budget" and "background budget of $1.00" in run["error"]
    job = next(j for j in (await client.call("cron.list", {}))["jobs"] if j["id"] == reminder["id"])
    assert job["enabled"] and job["state"]["nextRunAtMs"] > clock.now  # waiting, not gone
    assert len(fake.requests) == 1
    clock.advance(16 * 60_000)  # it looks again, still held: no second history entry
    gw.gateway.cron.wake()
    await eventually(lambda: gw.gateway.cron.get(reminder["id"]).state.next_run_at_ms
                     > clock.now, "the second look")  # fmt: skip
    runs = (await client.call("cron.runs", {"jobId": reminder["id"]}))["runs"]
    assert [r["status"] for r in runs] == ["budget"]
    await client.call("config.set", {"path": "budget.background", "value": 10})
    fake.enqueue("Reminder: call Ann.")
    clock.advance(16 * 60_000)
    gw.gateway.cron.wake()
    await recorded(client, 2)
    assert first["job"]["id"] != reminder["id"]
