"""One-off sessions do not pile up in memory (issue 41, months without a restart): every cron
task run and sub-agent gets a session of its own, and the hourly sweep forgets the actors
of those idle and unused for ten minutes. Their sessions stay in the store, and a later use
finds the same session; conversations, busy one-off sessions and recently used ones keep
their actors. A real gateway with a clock the test moves."""

from __future__ import annotations

import asyncio

from gsv_core.agent.manager import DROP_AFTER_MS
from gsv_core.agent.manager import SPAWN_KIND
from gsv_core.client import GatewayClient
from gsv_core.gateway.retention import SWEEP_EVERY_MS
from gsv_core.gateway.server import RunningGateway
from tests.cron.conftest import Clock
from tests.fakes.provider import FakeProvider
from tests.waiting import until

CRON_RUN = "agent:main:cron:job-1:run-1"
CHAT = "agent:main:chat-with-me"


async def _answered(gw: RunningGateway, client: GatewayClient, key: str, text: str) -> None:
    await client.call("chat.send", {"sessionKey": key, "message": text})
    sessions = gw.gateway.sessions
    await until(lambda: (a := sessions.loaded(key)) is not None and a.idle, f"{key} idle")


async def test_idle_one_off_actors_are_forgotten_and_their_sessions_kept(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, clock: Clock
) -> None:
    sessions = gw.gateway.sessions
    fake.enqueue("done with the job")
    fake.enqueue("hello")
    await _answered(gw, client, CRON_RUN, "the job's task")
    await _answered(gw, client, CHAT, "hi")
    spawned = await sessions.actor("agent:main:spawn:r-9", kind=SPAWN_KIND)
    session_id = sessions.loaded(CRON_RUN).record.session_id  # type: ignore[union-attr]
    before = sessions.loaded_count()

    retention = gw.gateway.retention
    await until(lambda: retention.last, "the sweep at start")
    assert retention.last["sessionActors"] == 0  # nothing was old enough then
    clock.advance(max(DROP_AFTER_MS, SWEEP_EVERY_MS))
    retention.wake()
    await until(lambda: retention.last.get("sessionActors") == 2, "the hourly sweep")

    assert sessions.loaded(CRON_RUN) is None
    assert sessions.loaded(spawned.key) is None
    assert sessions.loaded(CHAT) is not None  # a conversation keeps its actor
    assert sessions.loaded_count() == before - 2
    # the session is still there: the same id, and its history read from the store
    got = await client.call("session.get", {"sessionKey": CRON_RUN})
    assert got["sessionId"] == session_id
    fake.enqueue("again")
    await _answered(gw, client, CRON_RUN, "a follow-up")
    texts = [m.get("content") for m in await sessions.messages(CRON_RUN)]
    assert "the job's task" in str(texts) and "a follow-up" in str(texts)


async def test_busy_or_recently_used_one_off_actors_stay(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, clock: Clock
) -> None:
    sessions = gw.gateway.sessions
    fake.enqueue("old news")
    await _answered(gw, client, CRON_RUN, "first")
    gate = asyncio.Event()
    fake.enqueue(gate)  # the run of the second session waits for its model
    await client.call("chat.send", {"sessionKey": "agent:main:cron:job-2:run-1", "message": "x"})
    await until(lambda: sessions.processing("agent:main:cron:job-2:run-1"), "the busy run")
    clock.advance(DROP_AFTER_MS - 60_000)
    await sessions.actor(CRON_RUN)  # used again a minute before it would go
    clock.advance(2 * 60_000)

    assert sessions.drop_idle() == 0
    assert sessions.loaded(CRON_RUN) is not None
    assert sessions.processing("agent:main:cron:job-2:run-1")
    gate.set()
