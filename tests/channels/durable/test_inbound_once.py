"""An inbound message is processed once: the journal knows its (channel, account, id)
across restarts for JOURNAL_RETENTION_DAYS, and its answer is sent once even when the
restart's replay offers it again."""

from __future__ import annotations

from pathlib import Path

from gsv_core.channels.inbox import DAY_MS
from gsv_core.channels.inbox import JOURNAL_RETENTION_DAYS
from gsv_core.channels.test_channel import TestChannel
from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import serve
from gsv_core.protocol import events
from tests.channels.test_pipeline import dm
from tests.channels.test_pipeline import open_policy
from tests.channels.test_pipeline import until
from tests.cron.conftest import Clock
from tests.cron.conftest import server_config
from tests.fakes.provider import FakeProvider


async def started_channel(gw: RunningGateway) -> TestChannel:
    async with GatewayClient(gw.url, token=gw.token) as client:
        await open_policy(client)
        await client.call("channel.start", {"channel": "test"})
    adapter = gw.gateway.channels.adapters["test"]
    assert isinstance(adapter, TestChannel)
    return adapter


async def test_a_message_delivered_again_after_a_restart_is_a_duplicate(
    database: Path, fake: FakeProvider, clock: Clock
) -> None:
    """The platform sends the same message again after the gateway restarted: it is not
    processed a second time, for the retention period; after it, the id is forgotten."""
    async with serve(server_config(database, fake, clock), port=0) as gw:
        adapter = await started_channel(gw)
        await adapter.inject(dm("hello", "m1"))
        await until(lambda: adapter.texts("u1"), "the answer")
    clock.advance((JOURNAL_RETENTION_DAYS - 1) * DAY_MS)
    async with serve(server_config(database, fake, clock), port=0) as gw:
        inbox = gw.gateway.channels.inbox  # it forgot what was old at start: not m1 yet
        assert await inbox.receive(dm("hello", "m1"), wait=True) == {"status": "duplicate"}
        clock.advance(2 * DAY_MS)
        other = await inbox.receive(dm("later", "m2"), wait=True)  # a day on: forgets m1
        assert other["status"] == "started"
        again = await inbox.receive(dm("hello", "m1"), wait=True)
        assert again["status"] == "started"  # past the retention: a new message
        await until(lambda: len(fake.requests) == 3, "both new messages to reach the model")


async def test_a_final_reply_offered_twice_is_sent_once(
    gw: RunningGateway, test_channel: TestChannel
) -> None:
    """The replay after a restart and the run itself may both deliver a run's final
    reply: the journal entry it answers lets it out once."""
    await test_channel.inject(dm("hello", "m1"))
    await until(lambda: test_channel.texts("u1"), "the answer")
    entry = await gw.gateway.channels.store.entry(1)
    assert entry is not None and entry.state == "answered"
    context = {"channel": "test", "accountId": "default", "peer": {"kind": "dm", "id": "u1"},
               "inboundMessageId": "m1", "journalId": entry.id}  # fmt: skip
    final = {"state": "final", "runId": entry.run_id, "channelContext": context,
             "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}}  # fmt: skip
    await gw.gateway.channels.outbox.deliver_event(events.CHAT, final)  # sends before returning
    assert test_channel.texts("u1") == ["ok"]
    assert await gw.gateway.channels.outbox.replies.store.summary() == []
