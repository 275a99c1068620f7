"""The retention sweep on a real gateway and its SQLite file: it removes what is past its
retention setting and keeps the rest, at start and again an hour later by the gateway's
clock; `channels.journalRetentionDays` refuses bad values."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from gsv_core.client import GatewayClient
from gsv_core.errors import InvalidParams
from gsv_core.gateway.retention import SWEEP_EVERY_MS
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import serve
from gsv_core.storage.channels import ANSWERED
from gsv_core.storage.pairing import PairRequest
from gsv_core.storage.usage import DAY_MS
from gsv_core.storage.usage import UsageRow
from tests.cron.conftest import Clock
from tests.cron.conftest import server_config
from tests.fakes.provider import FakeProvider
from tests.waiting import until


def count(path: Path, table: str) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    finally:
        conn.close()


async def add_usage(running: RunningGateway, at: int) -> None:
    row = UsageRow(at, "main", "agent:main:main", "chat", "fake", "m", 1, 1, 0, 0, None)
    await running.gateway.usage.store.add(row)


async def add_journal(running: RunningGateway, message_id: str, at: int, state: str) -> None:
    store = running.gateway.channels.store
    entry_id, _ = await store.record("test", "default", message_id, {"text": "hi"}, at)
    await store.mark(entry_id, state, at)


async def add_pairing(running: RunningGateway, sender: str, at: int) -> None:
    request = PairRequest("test", sender, None, {"kind": "dm", "id": sender}, "default", "hi",
                          at, at, 1)  # fmt: skip
    await running.gateway.channels.pairing.store.save(request)


async def test_the_sweep_removes_what_is_past_retention_and_keeps_the_rest(
    gw: RunningGateway, client: GatewayClient, clock: Clock, database: Path
) -> None:
    """Usage rows past `usage.retentionDays`, closed journal entries past
    `channels.journalRetentionDays`, pairing requests past their TTL and expired join
    codes go; newer ones, and an open journal entry however old, stay."""
    now = clock.now
    await client.call("config.set", {"path": "usage.retentionDays", "value": 10})
    await client.call("config.set", {"path": "channels.journalRetentionDays", "value": 5})
    await until(lambda: gw.gateway.retention.last, "the sweep at start")  # the clock stands
    for at in (now - 11 * DAY_MS, now - 9 * DAY_MS):
        await add_usage(gw, at)
    await add_journal(gw, "old", now - 6 * DAY_MS, ANSWERED)
    await add_journal(gw, "recent", now - 4 * DAY_MS, ANSWERED)
    await add_journal(gw, "open", now - 60 * DAY_MS, "received")  # never answered: kept
    ttl = gw.gateway.channels.pairing_ttl_ms()
    await add_pairing(gw, "stale", now - ttl - 1)
    await add_pairing(gw, "fresh", now - ttl // 2)
    store = gw.gateway.auth.store
    await store.add_join_code("node", "gone", now - 2000, now - 1000)
    await store.add_join_code("node", "live", now - 1000, now + 60_000)

    removed = await gw.gateway.retention.sweep()

    assert removed == {"usageRows": 1, "inboundMessages": 1, "pairingRequests": 1,
                       "joinCodes": 1, "sessionActors": 0, "oneOffSessions": 0}  # fmt: skip
    conn = sqlite3.connect(database)
    try:
        assert conn.execute("SELECT at FROM usage_ledger").fetchall() == [(now - 9 * DAY_MS,)]
        kept = conn.execute("SELECT message_id FROM inbound_journal ORDER BY id").fetchall()
        assert kept == [("recent",), ("open",)]
        assert conn.execute("SELECT sender_id FROM pairing_requests").fetchall() == [("fresh",)]
        assert conn.execute("SELECT subject FROM join_codes").fetchall() == [("live",)]
    finally:
        conn.close()
    assert await gw.gateway.retention.sweep() == dict.fromkeys(removed, 0)  # nothing more


async def test_the_sweep_runs_at_start_and_again_an_hour_later(
    database: Path, fake: FakeProvider, clock: Clock
) -> None:
    """A row past retention when the gateway starts is gone without any traffic; one that
    ages past it while the gateway runs is gone at the next hourly sweep."""
    async with serve(server_config(database, fake, clock), port=0) as running:
        await until(lambda: running.gateway.retention.last, "the first start's sweep")
        await add_usage(running, clock.now - 401 * DAY_MS)  # past the default 400 days
        await add_usage(running, clock.now - 400 * DAY_MS + SWEEP_EVERY_MS // 2)
    assert count(database, "usage_ledger") == 2
    async with serve(server_config(database, fake, clock), port=0) as running:
        await until(lambda: count(database, "usage_ledger") == 1, "the sweep at start")
        clock.advance(SWEEP_EVERY_MS)
        running.gateway.retention.wake()
        await until(lambda: count(database, "usage_ledger") == 0, "the sweep an hour later")


@pytest.mark.parametrize("value", [0, -1, 3651, "thirty", 2.5, [30]])
async def test_bad_journal_retention_values_are_refused(
    client: GatewayClient,
    value: object,
) -> None:
    """Out of 1-3650, or not a whole number: a 400 naming the key; nothing stored."""
    before = await client.call("config.get", {"path": "channels.journalRetentionDays"})
    assert before["value"] == 30
    with pytest.raises(InvalidParams, match="journalRetentionDays"):
        await client.call("config.set", {"path": "channels.journalRetentionDays", "value": value})
    assert await client.call("config.get", {"path": "channels.journalRetentionDays"}) == before


async def test_the_sweep_keeps_this_month_s_spend_while_a_monthly_budget_counts_it(
    gw: RunningGateway, client: GatewayClient, clock: Clock, database: Path
) -> None:
    """`usage.retentionDays` 1 with `budget.monthly` set: the spend from earlier this
    month is what the monthly budget counts, so the sweep keeps it (forgetting it would
    let runs spend past the cap); last month's rows past retention still go."""
    now = clock.now  # 13 February
    await client.call("config.set", {"path": "usage.retentionDays", "value": 1})
    await client.call("config.set", {"path": "budget.monthly", "value": 5})
    await until(lambda: gw.gateway.retention.last, "the sweep at start")
    spent = UsageRow(now - 3 * DAY_MS, "main", "agent:main:main", "chat", "fake", "m",
                     1, 1, 0, 0, 10.0)  # fmt: skip
    await gw.gateway.usage.store.add(spent)
    await add_usage(gw, now - 20 * DAY_MS)  # January

    removed = await gw.gateway.retention.sweep()

    assert removed["usageRows"] == 1
    assert count(database, "usage_ledger") == 1
    budget = (await client.call("gateway.status"))["budget"]
    assert budget["spent"]["monthly"] == 10.0 and "monthly" in budget["reached"]
