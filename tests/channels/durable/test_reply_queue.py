"""The durable outbox (gsv_core.channels.reply_queue): a reply that cannot go out now is
kept in the database and delivered once when it can, in order, until it is too old."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection

from gsv_core.channels.reply_queue import RETRY_BASE_MS
from gsv_core.channels.reply_queue import RETRY_CAP_MS
from gsv_core.channels.reply_queue import backoff_ms
from gsv_core.channels.test_channel import TestChannel
from gsv_core.client import GatewayClient
from gsv_core.errors import NotFound
from gsv_core.errors import RateLimited
from gsv_core.errors import Unavailable
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from tests.channels.test_pipeline import dm
from tests.channels.test_pipeline import until
from tests.cron.conftest import Clock
from tests.cron.conftest import eventually
from tests.fakes.provider import FakeProvider
from tests.wire import connect_params
from tests.wire import handshake
from tests.wire import open_raw
from tests.wire import request

HOUR = 3_600_000
INBOUND = {"channel": "ext", "accountId": "a1", "peer": {"kind": "dm", "id": "p1"},
           "message": {"id": "x1", "text": "hi"}}  # fmt: skip


async def queued(client: GatewayClient, channel: str = "test") -> dict[str, Any] | None:
    try:
        accounts = (await client.call("channel.status", {"channel": channel}))["accounts"]
    except NotFound:  # an external channel nobody serves, with nothing queued
        return None
    waiting = [a["queuedReplies"] for a in accounts if "queuedReplies" in a]
    return waiting[0] if waiting else None


async def tried(client: GatewayClient, channel: str) -> dict[str, Any] | None:
    """The queued replies once a delivery was tried (queued first, tried just after)."""
    waiting = await queued(client, channel)
    return waiting if waiting and "lastError" in waiting else None


async def nothing_queued(client: GatewayClient, channel: str = "test") -> bool:
    return await queued(client, channel) is None


async def bridge(url: str) -> ClientConnection:
    ws = await open_raw(url)
    await handshake(ws, mode="channel", client_id="bridge", channel="ext", account_id="a1")
    return ws


async def outbound(ws: ClientConnection) -> dict[str, Any]:
    while True:
        frame = json.loads(await ws.recv())
        if frame.get("event") == "channel.outbound":
            payload: dict[str, Any] = frame["payload"]
            return payload


async def reply_left_waiting(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, head: str, tail: str
) -> dict[str, Any]:
    """The bridge sends a message and leaves before the reply (`head` + `tail`) is ready:
    the reply is queued and tried once; its queue entry is returned."""
    await client.call("config.set", {"path": "channels.ext", "value": {"dmPolicy": "open"}})
    ready = asyncio.Event()
    fake.enqueue(head, ready, tail)
    async with await bridge(gw.url) as ws:
        assert (await request(ws, "channel.inbound", INBOUND))["payload"]["status"] == "started"
    ready.set()
    return await eventually(lambda: tried(client, "ext"), "the reply queued and tried once")


async def test_a_reply_waits_for_its_bridge_and_goes_once_it_is_back(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider
) -> None:
    """The bridge left before the reply was ready: the reply is queued (status shows it,
    with why), and delivered once when the bridge connects again."""
    waiting = await reply_left_waiting(gw, client, fake, "here is ", "your answer")
    assert waiting["count"] == 1 and "not connected" in waiting["lastError"]
    status = await client.call("channel.status", {"channel": "ext"})
    assert status["accounts"][0]["connected"] is False
    async with await bridge(gw.url) as ws:
        reply = await outbound(ws)
        assert reply["message"] == {"text": "here is your answer", "replyToId": "x1"}
        await eventually(lambda: nothing_queued(client, "ext"), "the sent reply to be deleted")
        listed = await request(ws, "channel.inbound", INBOUND)  # the bridge sends it again
        assert listed["payload"] == {"status": "duplicate"}
    assert len(fake.requests) == 1
    with pytest.raises(NotFound):  # nothing waits any more, and nobody serves ext
        await client.call("channel.status", {"channel": "ext"})


async def test_a_returning_bridge_hears_its_connect_answered_before_waiting_replies(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider
) -> None:
    """A reply queued while the bridge was away goes out only after the bridge's connect
    is answered: the first frame it reads is its hello-ok, then the reply."""
    await reply_left_waiting(gw, client, fake, "queued ", "answer")
    invite = await client.call("auth.invite", {"role": "channel", "subject": "ext"})
    params = connect_params(mode="channel", client_id="bridge", channel="ext", account_id="a1",
                            token=None, auth={"joinCode": invite["code"]})  # fmt: skip
    async with await open_raw(gw.url) as ws:
        await ws.send(json.dumps({"type": "req", "id": "c1", "method": "connect",
                                  "params": params}))  # fmt: skip
        first = json.loads(await ws.recv())
        assert (first["type"], first["id"], first["ok"]) == ("res", "c1", True), first
        assert (await outbound(ws))["message"]["text"] == "queued answer"


async def test_replies_keep_their_order_and_go_once_the_account_reconnects(
    gw: RunningGateway, client: GatewayClient, test_channel: TestChannel, fake: FakeProvider
) -> None:
    """Two replies fail to send (the platform is unreachable); the account coming back
    sends both, in order, each once."""
    test_channel.fail_sends = True
    fake.enqueue("first answer")
    fake.enqueue("second answer")
    await test_channel.inject(dm("one", "m1"))
    await eventually(lambda: queued(client), "the first reply to be queued")
    await test_channel.inject(dm("two", "m2"))

    async def both() -> bool:
        waiting = await queued(client)
        return bool(waiting and waiting["count"] == 2)

    await eventually(both, "both replies to be queued")
    test_channel.fail_sends = False
    await client.call("channel.stop", {"channel": "test"})
    await client.call("channel.start", {"channel": "test"})  # reconnected: they go now
    await until(lambda: len(test_channel.texts("u1")) == 2, "both replies")
    assert test_channel.texts("u1") == ["first answer", "second answer"]
    assert [m.reply_to_id for _, m in test_channel.sent] == ["m1", "m2"]
    await eventually(lambda: nothing_queued(client), "the sent replies to be deleted")
    open_entries = await gw.gateway.channels.store.open_entries()
    assert open_entries == []  # both messages are answered in the journal


async def test_a_reply_older_than_the_max_age_is_dropped(
    gw: RunningGateway, client: GatewayClient, test_channel: TestChannel, clock: Clock
) -> None:
    """Kept for channels.outboxMaxAgeHours (24 by default, 48 here), then dropped."""
    await client.call("config.set", {"path": "channels.outboxMaxAgeHours", "value": 48})
    test_channel.fail_sends = True
    await test_channel.inject(dm("one", "m1"))
    await eventually(lambda: queued(client), "the reply to be queued")
    replies = gw.gateway.channels.outbox.replies
    clock.advance(30 * HOUR)  # older than the default, younger than 48 h
    await gw.gateway.channels.connected("test", "default")  # due now
    await replies.flush("test", "default")
    waiting = await queued(client)
    assert waiting is not None and waiting["count"] == 1  # tried, failed, kept
    clock.advance(20 * HOUR)
    test_channel.fail_sends = False
    await replies.flush("test", "default")
    assert await queued(client) is None and test_channel.sent == []  # dropped, not sent


async def test_queued_replies_survive_a_restart(tmp_path: Path) -> None:
    """A reply queued when the gateway stops is delivered by the next one, once."""
    database = tmp_path / "data" / "gsv.db"
    fake = FakeProvider()
    fake.enqueue("kept for you")
    config = ServerConfig(database=database, provider_factory=fake.factory)
    async with serve(config, port=0) as gw, GatewayClient(gw.url, token=gw.token) as c:
        await c.call("config.set", {"path": "channels.ext", "value": {"dmPolicy": "open"}})
        async with await bridge(gw.url) as ws:
            gate = asyncio.Event()
            fake.turns[0].insert(0, gate)
            await request(ws, "channel.inbound", INBOUND)
        gate.set()
        await eventually(lambda: queued(c, "ext"), "the reply to be queued")
    async with serve(config, port=0) as gw, GatewayClient(gw.url, token=gw.token) as c:
        assert (await queued(c, "ext") or {}).get("count") == 1
        async with await bridge(gw.url) as ws:
            assert (await outbound(ws))["message"]["text"] == "kept for you"
            assert (await request(ws, "channel.inbound", INBOUND))["payload"] == {
                "status": "duplicate"
            }
        await eventually(lambda: nothing_queued(c, "ext"), "the sent reply to be deleted")
    assert len(fake.requests) == 1


def test_backoff_doubles_up_to_a_cap_and_honours_retry_after() -> None:
    """2 s, 4 s, 8 s ... at most 5 min; a platform's retryAfter wins when longer."""
    unreachable = Unavailable("down")
    assert [backoff_ms(n, unreachable) for n in range(3)] == [
        RETRY_BASE_MS,
        2 * RETRY_BASE_MS,
        4 * RETRY_BASE_MS,
    ]
    assert backoff_ms(50, unreachable) == RETRY_CAP_MS
    assert backoff_ms(0, RateLimited("slow", details={"retryAfter": 30})) == 30_000
    assert backoff_ms(0, RateLimited("slow", details={"retryAfter": "soon"})) == RETRY_BASE_MS
