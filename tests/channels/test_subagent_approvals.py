"""Approvals asked by a sub-agent (gsv__Spawn) on a messenger, end to end with the test
channel on a real gateway: the prompt goes to the chat of the conversation that spawned
it and says it is a sub-agent's; the owner's "yes" or button press there answers it; a
stranger's "yes", or the owner's "yes" in another chat, does not."""

from __future__ import annotations

import json

import pytest

from gsv_core.channels.base import ActionEvent
from gsv_core.channels.base import InboundMessage
from gsv_core.channels.base import Peer
from gsv_core.channels.base import Sender
from gsv_core.channels.test_channel import TestChannel
from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from tests.channels.test_approval_buttons import NOT_OWNER
from tests.channels.test_approval_buttons import until
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call

TASK = "Find out which model is configured"
OWNERS = {"dmPolicy": "open", "owners": ["boss"], "groups": {"requireMention": False}}


def said(chat: str, sender: str, text: str, msg_id: str) -> InboundMessage:
    return InboundMessage(
        "test", "default", Peer("group", chat), msg_id, text, sender=Sender(sender)
    )


@pytest.fixture
async def channel(gw: RunningGateway, client: GatewayClient, fake: FakeProvider) -> TestChannel:
    """The test channel with `boss` as owner, a rule that makes gsv__ConfigGet wait for a
    human, and a model whose parent spawns a sub-agent that calls it."""
    rules = {"rules": [{"tool": "gsv__ConfigGet", "decision": "ask"}]}
    await client.call("config.set", {"path": "toolApproval", "value": rules})
    await client.call("config.set", {"path": "channels.test", "value": OWNERS})
    await client.call("channel.start", {"channel": "test"})
    adapter = gw.gateway.channels.adapters["test"]
    assert isinstance(adapter, TestChannel)
    fake.enqueue(call("gsv__Spawn", {"task": TASK, "tools": ["gsv__ConfigGet"]}))  # parent
    fake.enqueue(call("gsv__ConfigGet", {"path": "model.id"}))  # the sub-agent
    return adapter


def after_the_call(fake: FakeProvider) -> None:
    """What the model says once the sub-agent's call ran (or was refused)."""
    fake.enqueue("The model is set.")  # the sub-agent
    fake.enqueue("The helper found the model.")  # the parent


def prompts(channel: TestChannel, chat: str) -> list[str]:
    return [text for text in channel.texts(chat) if "Approval needed" in text]


def replies_to(channel: TestChannel, msg_id: str) -> list[str]:
    return [m.text for _, m in channel.sent if m.reply_to_id == msg_id]


async def sub_agent_prompt(gw: RunningGateway, channel: TestChannel, chat: str) -> str:
    """The id of the sub-agent's pending approval, once its prompt is in `chat`."""
    await until(lambda: prompts(channel, chat), f"the sub-agent's prompt in {chat}")
    [approval] = gw.gateway.approvals.pending()
    assert ":spawn:" in approval.session_key
    return approval.id


async def test_a_sub_agents_prompt_reaches_the_chat_and_the_owners_yes_answers_it(
    gw: RunningGateway, channel: TestChannel, fake: FakeProvider
) -> None:
    """The prompt is in the spawning chat, says whose it is, and the owner's "yes" there
    lets the sub-agent's call run: the parent's answer arrives."""
    await channel.inject(said("g1", "boss", "which model do we use?", "m1"))
    approval_id = await sub_agent_prompt(gw, channel, "g1")
    [prompt] = prompts(channel, "g1")
    assert approval_id in prompt and "gsv__ConfigGet" in prompt
    assert "sub-agent" in prompt and TASK in prompt
    after_the_call(fake)
    await channel.inject(said("g1", "boss", "yes", "m2"))
    await until(lambda: "The helper found the model." in channel.texts("g1"), "the answer")
    assert replies_to(channel, "m2") == ["Approved gsv__ConfigGet."]
    assert gw.gateway.approvals.pending() == []


async def test_a_strangers_yes_does_not_answer_a_sub_agents_approval(
    gw: RunningGateway, client: GatewayClient, channel: TestChannel, fake: FakeProvider
) -> None:
    """In the group, mallory's "yes" is an ordinary message (queued behind the parent's
    run); the approval stays pending until the owner answers."""
    await channel.inject(said("g1", "boss", "which model do we use?", "m1"))
    approval_id = await sub_agent_prompt(gw, channel, "g1")
    await channel.inject(said("g1", "mallory", "yes", "m2"))
    await queued_behind_the_parent(client, "g1")
    assert replies_to(channel, "m2") == []
    assert [a.id for a in gw.gateway.approvals.pending()] == [approval_id]
    after_the_call(fake)
    fake.enqueue("Mallory said yes.")  # her message, run once the parent is done
    await channel.inject(said("g1", "boss", "yes", "m3"))
    await until(lambda: "Mallory said yes." in channel.texts("g1"), "the answer to mallory")
    assert replies_to(channel, "m3") == ["Approved gsv__ConfigGet."]
    assert "The helper found the model." in channel.texts("g1")


async def queued_behind_the_parent(client: GatewayClient, chat: str) -> None:
    """Waits until a message of `chat` waits in its conversation's queue."""
    listed = await client.call("sessions.list", {"limit": 50})
    [key] = [s["sessionKey"] for s in listed["sessions"] if s["sessionKey"].endswith(chat)]

    async def queued() -> int:
        stats: dict[str, int] = await client.call("session.stats", {"sessionKey": key})
        return stats["queueSize"]

    await until(queued, f"a message queued in {key}")


async def test_the_owners_yes_in_another_chat_does_not_answer_it(
    gw: RunningGateway, channel: TestChannel, fake: FakeProvider
) -> None:
    """The prompt is only in the chat that spawned the sub-agent; the owner's "yes" in
    another group is an ordinary message of that group's conversation."""
    await channel.inject(said("g1", "boss", "which model do we use?", "m1"))
    approval_id = await sub_agent_prompt(gw, channel, "g1")
    fake.enqueue("Yes to what?")  # the other group's conversation
    await channel.inject(said("g2", "boss", "yes", "m2"))
    await until(lambda: "Yes to what?" in channel.texts("g2"), "the other group's answer")
    assert prompts(channel, "g2") == []
    assert [a.id for a in gw.gateway.approvals.pending()] == [approval_id]
    after_the_call(fake)
    await channel.inject(said("g1", "boss", "no", "m3"))
    await until(lambda: "The helper found the model." in channel.texts("g1"), "the answer")
    assert replies_to(channel, "m3") == ["Denied gsv__ConfigGet."]
    assert "denied by user" in json.dumps(fake.requests[3].messages)  # the sub-agent read it


async def test_a_button_press_answers_a_sub_agents_approval_only_for_an_owner(
    gw: RunningGateway, channel: TestChannel, fake: FakeProvider
) -> None:
    """A press of the prompt's Allow button (as an adapter with buttons reports it) by a
    stranger is refused; the owner's press approves the sub-agent's call."""
    await channel.inject(said("g1", "boss", "which model do we use?", "m1"))
    approval_id = await sub_agent_prompt(gw, channel, "g1")

    def press(sender: str) -> ActionEvent:
        return ActionEvent("test", "default", Peer("group", "g1"), Sender(sender),
                           f"approve:{approval_id}:allow")  # fmt: skip

    assert await gw.gateway.channels.action(press("mallory")) == NOT_OWNER
    assert [a.id for a in gw.gateway.approvals.pending()] == [approval_id]
    after_the_call(fake)
    assert await gw.gateway.channels.action(press("boss")) == "Approved gsv__ConfigGet."
    await until(lambda: "The helper found the model." in channel.texts("g1"), "the answer")
