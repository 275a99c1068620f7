"""What a long-running gateway keeps of its sessions: the histories of the most recently
used sessions only (gsv_core.agent.history_cache), never a busy session's released, and
nothing at all for a session that is only read."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path

from gsv_core.agent.history_cache import DEFAULT_LIMIT
from gsv_core.agent.manager import SessionManager
from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from tests.agent.conftest import KEY
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.fakes.provider import FakeProvider

READS = ("session.get", "session.stats", "session.history", "session.preview")


async def chat(client: GatewayClient, log: EventLog, text: str, key: str = KEY) -> None:
    run_id = (await send(client, text, key=key))["runId"]
    assert (await log.ended(run_id))["state"] == "final"


async def settled(sessions: SessionManager, *keys: str) -> None:
    """Wait until the runs of `keys` have closed their books (their tasks ended)."""
    for key in keys:
        actor = sessions.loaded(key)
        task = actor.running_task() if actor is not None else None
        if task is not None:
            await asyncio.wait({task})


def held(sessions: SessionManager, keys: list[str]) -> list[str]:
    """The keys among `keys` whose history is in memory."""
    return [
        key
        for key in keys
        if (actor := sessions.loaded(key)) is not None and actor.history_cached is not None
    ]


async def test_a_released_history_reloads_identical_and_the_next_message_continues_it(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """A history given back reloads equal to what was cached, and the next run sees it all."""
    sessions = gw.gateway.sessions
    sessions.histories.limit = 1
    await chat(client, log, "first")
    await chat(client, log, "second")
    await settled(sessions, KEY)
    actor = sessions.loaded(KEY)
    assert actor is not None and actor.history_cached is not None
    before = copy.deepcopy(actor.history_cached)
    await chat(client, log, "elsewhere", key="agent:main:other")
    assert actor.history_cached is None and KEY not in sessions.histories
    preview = await client.call("session.preview", {"sessionKey": KEY})
    assert preview["messages"] == before and preview["messageCount"] == 4
    assert actor.history_cached is None  # a read does not load it back
    await chat(client, log, "third")
    assert sessions.loaded(KEY) is actor  # the same actor: one per key, always
    after = await actor.history()
    assert after[:4] == before and [m["role"] for m in after[4:]] == ["user", "assistant"]
    seen = fake.requests[-1].messages
    assert [m["role"] for m in seen] == ["user", "assistant"] * 2 + ["user"]
    assert after == await sessions.store.messages(KEY)


async def test_a_session_with_a_run_in_flight_or_queued_messages_keeps_its_history(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """Past the bound, a session that is running or has a queue is never released; once
    idle, the next use of another session releases it."""
    sessions = gw.gateway.sessions
    sessions.histories.limit = 1
    gate = asyncio.Event()
    fake.enqueue("slow ", gate, "reply")
    running = (await send(client, "long task"))["runId"]
    await fake.streaming.wait()
    queued = await send(client, "after it")
    assert queued["queued"] is True
    others = [f"agent:main:other{i}" for i in range(3)]
    for key in others:
        await chat(client, log, "hi", key=key)
    assert held(sessions, [KEY]) == [KEY] and KEY in sessions.histories
    gate.set()
    await log.ended(running)
    await log.ended(queued["runId"])
    await settled(sessions, KEY, *others)
    assert held(sessions, [KEY]) == [KEY]  # idle now, but nothing was used since
    await chat(client, log, "next", key=others[0])
    assert held(sessions, [KEY]) == []
    stored = await sessions.store.messages(KEY)
    assert [m["role"] for m in stored] == ["user", "assistant", "user", "assistant"]


async def test_reads_of_never_used_keys_load_no_actor(
    gw: RunningGateway, client: GatewayClient
) -> None:
    """Many session.get/stats/history/preview calls on unknown keys make no actor and list
    nothing (a row only fixes each key's id); each answers a fresh, empty session under its
    canonical key."""
    sessions = gw.gateway.sessions
    before = sessions.loaded_count()
    for i in range(50):
        key = f"agent:main:typo{i}"
        for method in READS:
            answer = await client.call(method, {"sessionKey": key})
            assert answer["sessionKey"] == key
        stats = await client.call("session.stats", {"sessionKey": key})
        assert stats["messageCount"] == 0 and stats["queueSize"] == 0
        assert stats["isProcessing"] is False
        preview = await client.call("session.preview", {"sessionKey": key, "limit": 5})
        assert preview["messages"] == []
    assert sessions.loaded_count() == before
    assert (await client.call("sessions.list"))["count"] == 0


async def test_reads_of_a_stored_session_do_not_load_it(tmp_path: Path, fake: FakeProvider) -> None:
    """After a restart a stored session is described from the store: the answers its
    actor gave, and no actor is made for it."""
    config = ServerConfig(database=tmp_path / "data" / "gsv.db", provider_factory=fake.factory)
    async with serve(config, port=0) as gw, GatewayClient(gw.url, token=gw.token) as client:
        log = EventLog(client)
        await chat(client, log, "hello")
        await log.close()
        loaded = {m: await client.call(m, {"sessionKey": KEY}) for m in READS}
    async with serve(config, port=0) as gw, GatewayClient(gw.url, token=gw.token) as client:
        sessions = gw.gateway.sessions
        before = sessions.loaded_count()
        for method, answer in loaded.items():
            fresh = await client.call(method, {"sessionKey": KEY})
            if method == "session.stats":
                fresh.pop("uptime"), answer.pop("uptime")
            assert fresh == answer, method
        assert sessions.loaded(KEY) is None and sessions.loaded_count() == before


async def test_the_bound_holds_after_more_sessions_than_it(
    gw: RunningGateway, client: GatewayClient, log: EventLog
) -> None:
    """Used one after another, more sessions than the bound: only the most recent keep
    their histories; the older ones reload on their next use."""
    sessions = gw.gateway.sessions
    keys = [f"agent:main:peer{i}" for i in range(DEFAULT_LIMIT + 8)]
    for key in keys:
        await chat(client, log, "hello", key=key)
    await settled(sessions, *keys)
    await client.call("session.patch", {"sessionKey": keys[-1], "label": "last"})  # a use
    assert held(sessions, keys) == keys[-DEFAULT_LIMIT:]
    assert len(sessions.histories) == DEFAULT_LIMIT
    assert sessions.loaded_count() == len(keys)  # the actors stay (see manager.py)
    await chat(client, log, "again", key=keys[0])
    assert keys[0] in held(sessions, keys) and len(held(sessions, keys)) == DEFAULT_LIMIT
    assert len(await sessions.loaded(keys[0]).history()) == 4  # type: ignore[union-attr]
