"""`chat.subscribe` (gsv addition; spec 18.31: the original broadcast every session's
events to every client, with no subscription model): a connection that names its sessions
hears only their conversation events; one that never asks still hears them all, as a
client of the original expects; approvals and config changes reach every client."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gsv_core.client import GatewayClient
from gsv_core.errors import GsvError
from gsv_core.gateway.server import RunningGateway
from tests.agent.conftest import KEY
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call


async def _run_to_end(log: EventLog, client: GatewayClient, key: str, run_id: str) -> None:
    await send(client, "hi", key, runId=run_id)
    await log.ended(run_id)


@contextlib.asynccontextmanager
async def _following(
    gw: RunningGateway, keys: list[str] | None
) -> AsyncIterator[tuple[GatewayClient, EventLog, Any]]:
    """A second owner connection that `chat.subscribe`d to `keys`: it, its events and
    the method's answer."""
    async with GatewayClient(gw.url, token=gw.token) as narrow:
        events = EventLog(narrow)
        answer = await narrow.call("chat.subscribe", {"sessionKeys": keys})
        try:
            yield narrow, events, answer
        finally:
            await events.close()


def _keys(log: EventLog) -> set[str]:
    return {p.get("sessionKey") for name, p in log.events if name in ("chat", "chat.tool")}


async def test_a_subscribed_client_hears_only_its_sessions_and_a_plain_one_hears_all(
    gw: RunningGateway, fake: FakeProvider, client: GatewayClient, log: EventLog
) -> None:
    fake.enqueue("one")
    fake.enqueue("two")
    async with _following(gw, ["mine"]) as (_, narrow_log, answer):
        assert answer == {"sessionKeys": ["mine"]}
        await _run_to_end(log, client, "other", "r-other")
        await _run_to_end(log, client, "mine", "r-mine")
        await narrow_log.wait(lambda: "final" in narrow_log.states("r-mine"), "its own final")
        # the plain client heard both sessions; the subscribed one only its own
        assert {"other", "mine"} <= _keys(log)
        assert _keys(narrow_log) == {"mine"}
        assert narrow_log.of_run("r-other") == []


async def test_main_names_the_main_session_and_null_follows_every_session_again(
    gw: RunningGateway, fake: FakeProvider, client: GatewayClient, log: EventLog
) -> None:
    fake.enqueue("first")
    fake.enqueue("second")
    # canonicalised as chat.send does: "main" is the agent's main session
    async with _following(gw, ["main", "elsewhere"]) as (narrow, narrow_log, answer):
        assert answer == {"sessionKeys": [KEY, "elsewhere"]}
        await _run_to_end(log, client, "main", "r-main")
        await narrow_log.wait(lambda: "final" in narrow_log.states("r-main"), "the main final")
        assert await narrow.call("chat.subscribe", {"sessionKeys": None}) == {"sessionKeys": None}
        await _run_to_end(log, client, "somewhere", "r-some")
        await narrow_log.wait(lambda: "final" in narrow_log.states("r-some"), "every session")


async def test_an_empty_list_hears_no_conversation_but_still_hears_approvals(
    gw: RunningGateway, fake: FakeProvider, client: GatewayClient, log: EventLog
) -> None:
    """Approvals are not conversation events: a client following no session (or other
    sessions) is still asked, since the owner answers from whatever is open."""
    # deleting BOOTSTRAP.md asks: the file is part of every prompt
    fake.enqueue(call("gsv__DeleteFile", {"path": "BOOTSTRAP.md"}))
    async with _following(gw, []) as (_, narrow_log, answer):
        assert answer == {"sessionKeys": []}
        await send(client, "set it", "asks", runId="r-asks")
        await narrow_log.wait(
            lambda: any(name == "tool.approval" for name, _ in narrow_log.events),
            "the approval request",
        )
        await log.wait(lambda: "paused" in log.states("r-asks"), "the paused run")
        assert not any(name == "chat" for name, _ in narrow_log.events)
        await client.call("chat.send", {"sessionKey": "asks", "message": "/stop"})


async def test_the_subscription_belongs_to_its_connection(
    gw: RunningGateway, fake: FakeProvider, client: GatewayClient, log: EventLog
) -> None:
    """Another connection of the same owner keeps hearing everything."""
    fake.enqueue("x")
    async with GatewayClient(gw.url, token=gw.token) as narrow:
        await narrow.call("chat.subscribe", {"sessionKeys": ["nobody-sends-here"]})
        await _run_to_end(log, client, "busy", "r-busy")
    assert "final" in log.states("r-busy")


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({}, "sessionKeys"),
        ({"sessionKeys": "main"}, "sessionKeys"),
        ({"sessionKeys": [""]}, "sessionKey"),
        ({"sessionKeys": ["x" * 600]}, "limit is 512"),
        ({"sessionKeys": [f"s{n}" for n in range(65)]}, "sessionKeys"),
        ({"sessionKeys": [7]}, "sessionKeys"),
    ],
)
async def test_bad_subscriptions_are_refused_and_change_nothing(
    gw: RunningGateway,
    fake: FakeProvider,
    client: GatewayClient,
    log: EventLog,
    params: dict[str, Any],
    says: str,
) -> None:
    await client.call("chat.subscribe", {"sessionKeys": ["kept"]})
    with pytest.raises(GsvError) as refused:
        await client.call("chat.subscribe", params)
    assert refused.value.code == 400
    assert says in refused.value.message
    # the subscription it had still holds: another session's run is not heard
    fake.enqueue("unheard")
    fake.enqueue("heard")
    await send(client, "hi", "elsewhere", runId="r-else")
    await send(client, "hi", "kept", runId="r-kept")
    await log.ended("r-kept")
    assert log.of_run("r-else") == []


def test_only_clients_may_subscribe() -> None:
    """The router refuses the method to nodes and channels (tests/gateway/test_dispatch.py
    walks what that table means on the wire)."""
    from gsv_core.protocol import methods as m

    assert m.METHODS[m.CHAT_SUBSCRIBE].modes == {m.CLIENT}


async def test_a_routing_change_applies_to_the_next_key_and_is_worked_out_once(
    gw: RunningGateway, client: GatewayClient
) -> None:
    """Every message asks for the routing settings: they are worked out once per config
    (one object while it stands), and a `config.set` of `session.mainKey` reaches the
    very next key canonicalised."""
    sessions = gw.gateway.sessions
    before = await client.call("chat.subscribe", {"sessionKeys": ["main"]})
    assert before["sessionKeys"] == ["agent:main:main"]
    assert sessions.routing() is sessions.routing()
    await client.call("config.set", {"path": "session.mainKey", "value": "home"})
    after = await client.call("chat.subscribe", {"sessionKeys": ["main"]})
    assert after["sessionKeys"] == ["agent:main:home"]
    assert sessions.routing().main_key == "home"
