"""Cron replies delivered to channels: a system event answers in the
agent's last active conversation; a task delivers when asked, to `channel` + `to`, to `to`
on the last channel, or to the last conversation; with nowhere to go, clients only."""

from __future__ import annotations

from typing import Any

from gsv_core.channels.base import InboundMessage
from gsv_core.channels.base import Peer
from gsv_core.channels.base import Sender
from gsv_core.channels.test_channel import TestChannel
from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from tests.cron.conftest import HOUR
from tests.cron.conftest import eventually
from tests.cron.conftest import task_job
from tests.fakes.provider import FakeProvider

NOTE = "[Your response will be delivered automatically to test:{peer}"


async def channel_talked(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider
) -> TestChannel:
    """The test channel running with an open policy, and Ann, its owner, having talked to
    the agent (a guest's conversation is never cron's `last`: tests/security)."""
    value = {"dmPolicy": "open", "owners": ["u1"]}
    await client.call("config.set", {"path": "channels.test", "value": value})
    await client.call("channel.start", {"channel": "test"})
    adapter = gw.gateway.channels.adapters["test"]
    assert isinstance(adapter, TestChannel)
    fake.enqueue("Hi Ann.")
    await adapter.inject(
        InboundMessage(
            "test",
            "default",
            Peer("dm", "u1", name="Ann"),
            "m1",
            "hello",
            sender=Sender("u1", "Ann"),
        )
    )
    await eventually(lambda: adapter.texts("u1") == ["Hi Ann."], "the answer to Ann")
    return adapter


async def run_now(client: GatewayClient, doc: dict[str, Any]) -> dict[str, Any]:
    job = (await client.call("cron.add", doc))["job"]
    result: dict[str, Any] = (await client.call("cron.run", {"id": job["id"], "mode": "force"}))[
        "results"
    ][0]
    assert result["status"] == "ok", result
    return result


def last_prompt(fake: FakeProvider) -> str:
    return str(fake.requests[-1].messages[-1]["content"])


async def test_a_delivered_task_answers_the_last_conversation(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider
) -> None:
    """deliver: true sends the task's reply to Ann, and the agent is told so."""
    channel = await channel_talked(gw, client, fake)
    fake.enqueue("Daily report: all green.")
    await run_now(client, task_job(deliver=True))
    await eventually(lambda: "Daily report: all green." in channel.texts("u1"), "the delivery")
    assert NOTE.format(peer="u1") in last_prompt(fake)
    assert channel.sent[-1][1].reply_to_id is None, "a cron reply answers no message"


async def test_channel_and_to_send_a_dm_to_that_peer(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider
) -> None:
    """channel + to: a DM to `to` on that channel; only `to`: on the last active channel."""
    channel = await channel_talked(gw, client, fake)
    fake.enqueue("For Bob.")
    await run_now(client, task_job("bob", channel="test", to="u7"))
    await eventually(lambda: channel.texts("u7") == ["For Bob."], "the DM to u7")
    fake.enqueue("For Cy.")
    await run_now(client, task_job("cy", to="u8"))
    await eventually(lambda: channel.texts("u8") == ["For Cy."], "the DM to u8")
    assert NOTE.format(peer="u8") in last_prompt(fake)
    assert channel.texts("u1") == ["Hi Ann."], "Ann got neither"


async def test_a_system_event_answers_in_the_last_conversation(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider
) -> None:
    """A system event always delivers: its reply reaches Ann."""
    channel = await channel_talked(gw, client, fake)
    fake.enqueue("Reminder: stand-up in 5 minutes.")
    doc = {"name": "nudge", "schedule": {"kind": "every", "everyMs": HOUR},
           "spec": {"mode": "systemEvent", "text": "remind about stand-up"}}  # fmt: skip
    await run_now(client, doc)
    await eventually(
        lambda: "Reminder: stand-up in 5 minutes." in channel.texts("u1"), "the delivery"
    )


async def test_an_undelivered_task_stays_with_the_clients(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider
) -> None:
    """Without deliver, channel or to, nothing goes to the channel and no note is added."""
    channel = await channel_talked(gw, client, fake)
    fake.enqueue("Quiet result.")
    result = await run_now(client, task_job())
    assert result["summary"] == f"ran in {result['sessionKey']}: Quiet result."
    assert NOTE.format(peer="u1") not in last_prompt(fake)
    assert channel.texts() == ["Hi Ann."]


async def test_with_no_channel_yet_a_delivered_task_still_runs(
    client: GatewayClient, fake: FakeProvider
) -> None:
    """deliver: true before anyone wrote from a channel: the run is ok, the agent is not
    promised a delivery, and only `to` without a channel has nowhere to go either."""
    fake.enqueue("Nobody to tell.")
    result = await run_now(client, task_job(deliver=True))
    assert result["summary"] == f"ran in {result['sessionKey']}: Nobody to tell."
    assert "delivered automatically" not in last_prompt(fake)
    fake.enqueue("Still nobody.")
    await run_now(client, task_job("only-to", to="u9"))
    assert "delivered automatically" not in last_prompt(fake)


async def test_each_run_says_where_its_reply_went(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider
) -> None:
    """Issue 40.8: a task without --deliver keeps its reply in its own session and its run
    says so (and how to deliver it); a delivered one names the peer; `gsv cron runs`
    shows both."""
    await channel_talked(gw, client, fake)
    for name, spec in (("quiet", {"mode": "task", "message": "note"}),
                       ("loud", {"mode": "task", "message": "tell", "deliver": True})):  # fmt: skip
        fake.enqueue(f"{name} reply")
        job = {"name": name, "schedule": {"kind": "every", "everyMs": 3_600_000}, "spec": spec}
        added = (await client.call("cron.add", job))["job"]
        await client.call("cron.run", {"id": added["id"], "mode": "force"})
    runs = {r["summary"]: r for r in (await client.call("cron.runs", {}))["runs"]}
    assert runs["quiet reply"]["reply"].startswith("kept in ")
    assert "--deliver" in runs["quiet reply"]["reply"]
    assert runs["loud reply"]["reply"] == "delivered to test:u1"
