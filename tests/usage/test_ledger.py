"""The usage ledger on a real gateway: one row per model call, attributed to what started
the run (chat, channel, cron job, heartbeat, sessionSend, compaction), priced from the
table, summed by `usage.get`, pruned by age, kept across a restart; bad params refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gsv_core.client import GatewayClient
from gsv_core.errors import InvalidParams
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import serve
from tests.cron.conftest import Clock
from tests.cron.conftest import eventually
from tests.cron.conftest import server_config
from tests.cron.conftest import task_job
from tests.cron.test_cron_delivery import channel_talked
from tests.cron.test_cron_delivery import run_now
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call

DAY = 86_400_000
# the default model, claude-sonnet-4-...: $3 in, $15 out per Mtok; the fake's 10 in, 5 out
CALL_COST = (10 * 3 + 5 * 15) / 1_000_000


async def by(client: GatewayClient, group: str = "source", **params: Any) -> dict[str, Any]:
    report: dict[str, Any] = await client.call("usage.get", {"groupBy": group, **params})
    return report


async def sources(client: GatewayClient) -> dict[str, int]:
    return {g["name"]: g["calls"] for g in (await by(client))["groups"]}


async def chat(client: GatewayClient, text: str, session: str = "agent:main:main") -> None:
    before = (await by(client))["total"]["calls"]
    await client.call("chat.send", {"sessionKey": session, "message": text})

    async def recorded() -> bool:
        return bool((await by(client))["total"]["calls"] > before)

    await eventually(recorded, "the chat's model call in the ledger")


async def recorded(client: GatewayClient, calls: int) -> None:
    async def enough() -> bool:
        return bool((await by(client))["total"]["calls"] >= calls)

    await eventually(enough, f"{calls} model calls in the ledger")


async def test_a_chat_records_one_priced_row(client: GatewayClient, fake: FakeProvider) -> None:
    fake.enqueue("Hello.")
    await chat(client, "hi")
    report = await by(client, "model")
    assert report["count"] == 1
    (group,) = report["groups"]
    assert group["name"] == "anthropic/claude-sonnet-4-20250514"
    assert (group["calls"], group["input"], group["output"]) == (1, 10, 5)
    assert group["costUsd"] == pytest.approx(CALL_COST)
    assert report["total"]["costUsd"] == pytest.approx(CALL_COST)
    assert await sources(client) == {"chat": 1}


async def test_every_model_call_of_a_tool_loop_is_a_row(
    client: GatewayClient, fake: FakeProvider
) -> None:
    fake.enqueue(call("gsv__ConfigGet", {"path": "userTimezone"}))
    fake.enqueue("It is UTC.")
    await chat(client, "which timezone?")
    await recorded(client, 2)
    assert (await by(client, "session"))["groups"][0]["calls"] == 2


async def test_channel_cron_and_heartbeat_runs_are_named_by_their_source(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider
) -> None:
    await channel_talked(gw, client, fake)
    fake.enqueue("Daily report: all green.")
    await run_now(client, task_job("daily"))
    fake.enqueue("All quiet.")
    await client.call("heartbeat.trigger", {})
    assert await sources(client) == {"channel:test": 1, "cron:daily": 1, "heartbeat": 1}


async def test_a_session_send_is_its_own_source(client: GatewayClient, fake: FakeProvider) -> None:
    """The other session's run (started by gsv__SessionSend) counts as sessionSend."""
    fake.enqueue(call("gsv__SessionSend", {"sessionKey": "agent:main:helper",
                                           "message": "ping", "waitSeconds": 10}))  # fmt: skip
    fake.enqueue("pong")  # the helper session's answer
    fake.enqueue("It said pong.")
    await chat(client, "ask the helper")
    await recorded(client, 3)
    assert await sources(client) == {"chat": 2, "sessionSend": 1}


async def test_auto_compaction_is_recorded_as_compaction(
    client: GatewayClient, fake: FakeProvider
) -> None:
    """A conversation past its window is summarised first: that call is `compaction`."""
    settings = {"model.contextWindow": 1024, "compaction.reserveTokens": 600,
                "compaction.keepRecentTokens": 50}  # fmt: skip
    for path, value in settings.items():
        await client.call("config.set", {"path": path, "value": value})
    for turn in range(3):
        fake.enqueue(f"Answer {turn}: " + "words " * 150)
        await chat(client, f"question {turn}: " + "more words " * 60)
    assert (await sources(client)).get("compaction", 0) >= 1


async def test_unpriced_models_count_tokens_with_no_cost(
    client: GatewayClient, fake: FakeProvider
) -> None:
    await client.call("config.set", {"path": "model", "value": {"provider": "local",
                                                                "id": "llama3.1:8b"}})  # fmt: skip
    fake.enqueue("Hi.")
    await chat(client, "hi")
    (group,) = (await by(client, "model"))["groups"]
    assert (group["input"], group["costUsd"], group["unpricedCalls"]) == (10, None, 1)
    await client.call(
        "config.set", {"path": "pricing", "value": {"llama3.1:8b": {"input": 0, "output": 0}}}
    )
    fake.enqueue("Hi again.")
    await chat(client, "hi")
    (group,) = (await by(client, "model"))["groups"]
    assert (group["calls"], group["costUsd"], group["unpricedCalls"]) == (2, 0.0, 1)


async def test_ranges_and_days(client: GatewayClient, fake: FakeProvider, clock: Clock) -> None:
    fake.enqueue("One.")
    await chat(client, "one")
    clock.advance(DAY)
    fake.enqueue("Two.")
    await chat(client, "two")
    days = (await by(client, "day"))["groups"]
    assert [d["calls"] for d in days] == [1, 1] and days[0]["name"] < days[1]["name"]
    today = await by(client, since=clock.now - 1000)
    assert today["total"]["calls"] == 1
    assert (await by(client, since=clock.now - 3 * DAY, until=clock.now - 2 * DAY))["count"] == 0


async def test_rows_older_than_the_retention_are_pruned(
    client: GatewayClient, fake: FakeProvider, clock: Clock
) -> None:
    await client.call("config.set", {"path": "usage.retentionDays", "value": 30})
    fake.enqueue("Old.")
    await chat(client, "old")
    clock.advance(31 * DAY)
    fake.enqueue("New.")
    await chat(client, "new")  # the first record of a new day prunes, right after it

    async def pruned() -> bool:
        report = await by(client, since=clock.now - 40 * DAY)
        return bool(report["total"]["calls"] == 1)

    await eventually(pruned, "the 31-day-old row pruned")


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"groupBy": "week"}, "groupBy"),
        ({"since": -1}, "since"),
        ({"since": "7d"}, "since"),
        ({"since": 2000, "until": 1000}, "since must be before until"),
    ],
)
async def test_bad_params_are_a_clear_400(
    client: GatewayClient, params: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidParams, match=field):
        await client.call("usage.get", params)


async def test_the_ledger_survives_a_restart(
    database: Path, fake: FakeProvider, clock: Clock
) -> None:
    for turn in range(2):
        async with (
            serve(server_config(database, fake, clock), port=0) as running,
            GatewayClient(running.url, token=running.token) as client,
        ):
            fake.enqueue(f"Turn {turn}.")
            await chat(client, f"turn {turn}")
            assert (await by(client))["total"]["calls"] == turn + 1


async def test_a_session_messaged_by_background_work_counts_as_background(
    client: GatewayClient, fake: FakeProvider
) -> None:
    """A cron job that messages another session: that run is `sessionSend@cron:<job>`,
    so the background budget covers it too."""
    fake.enqueue(call("gsv__SessionSend", {"sessionKey": "agent:main:helper",
                                           "message": "ping", "waitSeconds": 10}))  # fmt: skip
    fake.enqueue("pong")
    fake.enqueue("The helper said pong.")
    await run_now(client, task_job("nightly"))
    await recorded(client, 3)
    assert await sources(client) == {"cron:nightly": 2, "sessionSend@cron:nightly": 1}
