"""One-off sessions do not pile up on disk (issue 41, months without a restart): a cron job
every minute makes 1,440 task-run sessions a day, and a sub-agent a session per spawn. The
sweep deletes those nobody touched for `session.oneOffRetentionDays`, with their messages,
their rows in the memory index and their media. Conversations, gsv__SessionSend targets,
recently touched one-off sessions and busy ones stay. A real gateway, its SQLite file and a
clock the test moves."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from gsv_core.agent.manager import DELETE_BATCH
from gsv_core.agent.manager import DROP_AFTER_MS
from gsv_core.agent.manager import SESSION_SEND_KIND
from gsv_core.agent.manager import SPAWN_KIND
from gsv_core.client import GatewayClient
from gsv_core.errors import InvalidParams
from gsv_core.gateway.server import RunningGateway
from gsv_core.storage.sessions import SessionRecord
from gsv_core.storage.usage import DAY_MS
from tests.cron.conftest import Clock
from tests.fakes.provider import FakeProvider
from tests.waiting import until

OLD_RUN = "agent:main:cron:job-1:run-1"
NEW_RUN = "agent:main:cron:job-1:run-2"
SPAWNED = "agent:main:spawn:r-1"
CHAT = "agent:main:chat-with-me"
NOTES = "agent:main:notes"  # a gsv__SessionSend target: its name is the agent's choice
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


def rows(database: Path, sql: str, *args: object) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(database)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def stored_keys(database: Path) -> set[str]:
    return {str(key) for (key,) in rows(database, "SELECT session_key FROM sessions")}


async def answered(gw: RunningGateway, key: str, text: str, kind: str | None = None) -> None:
    """`text` sent to `key` (made as `kind` if new) and its run ended."""
    actor = await gw.gateway.sessions.actor(key, kind=kind)
    await actor.send(text)
    await until(lambda: actor.idle, f"{key} idle")


async def test_stale_one_off_sessions_are_deleted_whole_and_the_rest_kept(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, clock: Clock, database: Path
) -> None:
    await until(lambda: gw.gateway.retention.last, "the sweep at start")
    await answered(gw, OLD_RUN, "check the quetzal feeder")
    await answered(gw, SPAWNED, "count the quetzal eggs", kind=SPAWN_KIND)
    await answered(gw, CHAT, "tell me about quetzals")
    await answered(gw, NOTES, "quetzal log", kind=SESSION_SEND_KIND)
    media = gw.gateway.sessions.host.media
    image = await media.save_image(OLD_RUN, PNG, "image/png")
    old_id = (await client.call("session.get", {"sessionKey": OLD_RUN}))["sessionId"]
    found = await client.call("memory.search", {"query": "quetzal", "scope": "sessions"})
    assert OLD_RUN in {hit["sessionKey"] for hit in found["results"]}

    clock.advance(30 * DAY_MS)  # the default retention, to the millisecond: not past it
    assert (await gw.gateway.retention.sweep())["oneOffSessions"] == 0
    clock.advance(1)
    await answered(gw, NEW_RUN, "a run of today")  # touched now: kept
    removed = await gw.gateway.retention.sweep()

    assert removed["oneOffSessions"] == 2
    assert stored_keys(database) == {CHAT, NOTES, NEW_RUN}
    gone = (OLD_RUN, SPAWNED)
    for table in ("messages", "memory_docs", "memory_pending"):
        marks = ", ".join("?" * len(gone))
        sql = f"SELECT count(*) FROM {table} WHERE session_key IN ({marks})"
        assert rows(database, sql, *gone) == [(0,)], table
    kept = rows(database, "SELECT count(*) FROM messages WHERE session_key = ?", CHAT)
    assert kept[0][0] >= 2
    assert not (media.root / image["mediaPath"]).exists()
    found = await client.call("memory.search", {"query": "quetzal", "scope": "sessions"})
    assert {hit["sessionKey"] for hit in found["results"]} == {CHAT, NOTES}
    # the key may be used again: it is a new, empty session
    again = await client.call("session.get", {"sessionKey": OLD_RUN})
    assert again["sessionId"] != old_id
    assert await gw.gateway.sessions.messages(OLD_RUN) == []
    assert (await gw.gateway.retention.sweep())["oneOffSessions"] == 0  # nothing more


async def test_a_busy_or_loaded_stale_session_stays_until_it_is_idle_and_let_go(
    gw: RunningGateway, fake: FakeProvider, clock: Clock, database: Path
) -> None:
    """A run in progress, or an actor someone used minutes ago, keeps even a stale
    session; once idle and let go (`drop_idle`), the next sweep deletes it."""
    await until(lambda: gw.gateway.retention.last, "the sweep at start")
    sessions = gw.gateway.sessions
    await answered(gw, OLD_RUN, "first")
    gate = asyncio.Event()
    fake.enqueue(gate, "done at last")  # this run waits for its model, then answers
    busy = await sessions.actor(SPAWNED, kind=SPAWN_KIND)
    await busy.send("a long task")
    await until(lambda: sessions.processing(SPAWNED), "the busy run")

    clock.advance(31 * DAY_MS)
    await sessions.actor(OLD_RUN)  # used just now (read, not written): its actor stays
    removed = await gw.gateway.retention.sweep()
    assert removed["oneOffSessions"] == 0
    assert {OLD_RUN, SPAWNED} <= stored_keys(database)

    gate.set()
    await until(lambda: busy.idle, "the busy run ended")
    clock.advance(DROP_AFTER_MS)
    removed = await gw.gateway.retention.sweep()
    assert removed["sessionActors"] == 2  # both idle now, and unused for ten minutes
    assert removed["oneOffSessions"] == 1
    assert OLD_RUN not in stored_keys(database)
    assert SPAWNED in stored_keys(database)  # touched by its run a moment ago


async def test_a_backlog_bigger_than_a_batch_goes_in_one_sweep(
    gw: RunningGateway, clock: Clock, database: Path
) -> None:
    """A gateway upgraded after months holds thousands: they go in batches of
    DELETE_BATCH, each its own write, all in the same sweep."""
    await until(lambda: gw.gateway.retention.last, "the sweep at start")
    store = gw.gateway.sessions.store
    count = DELETE_BATCH * 2 + 7
    for n in range(count):
        key = f"agent:main:cron:job-9:run-{n}"
        at = clock.now - 40 * DAY_MS + n
        record = SessionRecord(session_key=key, session_id=f"id-{n}", agent_id="main",
                               kind="cron", created_at=at, updated_at=at, last_active_at=at)  # fmt: skip
        await store.save(record)
    assert await gw.gateway.retention.sweep() == {**dict.fromkeys(gw.gateway.retention.last, 0),
                                                   "oneOffSessions": count}  # fmt: skip
    assert stored_keys(database) == set()


async def test_the_retention_setting_moves_the_line(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, clock: Clock, database: Path
) -> None:
    await until(lambda: gw.gateway.retention.last, "the sweep at start")
    await answered(gw, OLD_RUN, "x")
    await client.call("config.set", {"path": "session.oneOffRetentionDays", "value": 2})
    clock.advance(DAY_MS)
    assert (await gw.gateway.retention.sweep())["oneOffSessions"] == 0
    clock.advance(DAY_MS + 1)
    assert (await gw.gateway.retention.sweep())["oneOffSessions"] == 1
    assert OLD_RUN not in stored_keys(database)


@pytest.mark.parametrize("value", [0, -1, 3651, "thirty", 2.5, None, [30]])
async def test_bad_one_off_retention_values_are_refused(
    client: GatewayClient, value: object
) -> None:
    """Out of 1-3650, or not a whole number of days: a 400 naming the key; nothing
    stored."""
    path = "session.oneOffRetentionDays"
    before = await client.call("config.get", {"path": path})
    assert before["value"] == 30
    if value is None:  # null removes an override: the default shows again, no error
        await client.call("config.set", {"path": path, "value": value})
    else:
        with pytest.raises(InvalidParams, match="oneOffRetentionDays"):
            await client.call("config.set", {"path": path, "value": value})
    assert await client.call("config.get", {"path": path}) == before
