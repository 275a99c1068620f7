"""The channel pipeline with the in-process test channel on a real gateway: access
policies and pairing, mention gating, commands, errors told to the peer, media, splitting,
typing, the journal across a crash, external adapters over WebSocket, gsv__Message."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gsv_core.channels.base import InboundMessage
from gsv_core.channels.base import Media
from gsv_core.channels.base import Peer
from gsv_core.channels.base import Sender
from gsv_core.channels.test_channel import TestChannel
from gsv_core.client import GatewayClient
from gsv_core.errors import ProviderFailed
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from tests.fakes.provider import Fail
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.waiting import until
from tests.wire import handshake
from tests.wire import open_raw
from tests.wire import request

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 20).decode()


def dm(text: str, msg_id: str, sender: str = "u1", **extra: Any) -> InboundMessage:
    return InboundMessage(
        channel="test", account_id="default", peer=Peer("dm", sender, name="Ann"),
        message_id=msg_id, text=text, sender=Sender(sender, "Ann"), **extra,
    )  # fmt: skip


def group(text: str, msg_id: str, mentioned: bool = False) -> InboundMessage:
    return InboundMessage(
        channel="test", account_id="default", peer=Peer("group", "g1", name="Team"),
        message_id=msg_id, text=text, sender=Sender("u1", "Ann"), was_mentioned=mentioned,
    )  # fmt: skip


@pytest.fixture
def fake() -> FakeProvider:
    return FakeProvider()


@pytest.fixture
async def gw(tmp_path: Path, fake: FakeProvider) -> AsyncIterator[RunningGateway]:
    config = ServerConfig(database=tmp_path / "data" / "gsv.db", provider_factory=fake.factory)
    async with serve(config, port=0) as running:
        yield running


@pytest.fixture
async def client(gw: RunningGateway) -> AsyncIterator[GatewayClient]:
    async with GatewayClient(gw.url, token=gw.token) as connected:
        yield connected


@pytest.fixture
async def test_channel(gw: RunningGateway, client: GatewayClient) -> TestChannel:
    await client.call("channel.start", {"channel": "test"})
    adapter = gw.gateway.channels.adapters["test"]
    assert isinstance(adapter, TestChannel)
    return adapter


async def open_policy(client: GatewayClient, owners: tuple[str, ...] = ()) -> None:
    """Anyone may write on the test channel; `owners` are the owner's ids there (everyone
    else is a guest: gsv_core/authority.py)."""
    value = {"dmPolicy": "open", "owners": list(owners)}
    await client.call("config.set", {"path": "channels.test", "value": value})


async def test_an_unknown_sender_must_pair_first(
    client: GatewayClient, test_channel: TestChannel, fake: FakeProvider
) -> None:
    """Default policy is pairing: one prompt, silent repeats, approval welcomes, then chat."""
    await test_channel.inject(dm("hello?", "m1"))
    await until(lambda: test_channel.texts("u1"), "the pairing prompt")
    await test_channel.inject(dm("hello??", "m2"))
    pairs = (await client.call("pair.list"))["pairs"]
    assert list(pairs) == ["test:u1"] and pairs["test:u1"]["firstMessage"] == "hello?"
    assert test_channel.texts("u1") == [
        "Your message has been received. Awaiting approval from the owner."
    ]
    assert fake.requests == []
    approved = await client.call("pair.approve", {"channel": "test", "senderId": "u1"})
    warning = approved.pop("warning")  # dmScope main: Ann would share the owner's session
    assert "gsv config set session.dmScope per-channel-peer" in warning
    reach = approved.pop("reach")
    assert approved == {"approved": True, "senderId": "u1", "senderName": "Ann"}
    assert reach.startswith("a guest:") and "guests/test/u1/" in reach
    assert (await client.call("config.get", {"path": "channels.test.allowFrom"}))["value"] == ["u1"]
    assert test_channel.texts("u1")[-1].startswith("You're now connected!")
    fake.enqueue("Hi Ann!")
    await test_channel.inject(dm("now?", "m3"))
    await until(lambda: test_channel.texts("u1")[-1] == "Hi Ann!", "the agent's answer")
    reply_to = test_channel.sent[-1][1].reply_to_id
    assert reply_to == "m3"
    assert fake.requests[0].messages[-1]["content"].startswith("[test · ")


async def test_reject_and_unknown_pairs(client: GatewayClient, test_channel: TestChannel) -> None:
    """Rejecting removes the request; approving an unknown sender is a 404."""
    from gsv_core.errors import NotFound

    await test_channel.inject(dm("hi", "m1", sender="u9"))
    await until(lambda: test_channel.texts("u9"), "the prompt")
    assert await client.call("pair.reject", {"channel": "test", "senderId": "u9"}) == {
        "rejected": True,
        "senderId": "u9",
    }
    with pytest.raises(NotFound, match="No pending pairing for test:u9"):
        await client.call("pair.approve", {"channel": "test", "senderId": "u9"})


async def test_an_allowlist_blocks_strangers_silently(
    client: GatewayClient, test_channel: TestChannel, fake: FakeProvider, gw: RunningGateway
) -> None:
    """allowlist: a stranger gets no answer and the agent is not woken."""
    await client.call(
        "config.set",
        {"path": "channels.test", "value": {"dmPolicy": "allowlist", "allowFrom": ["u1"]}},
    )
    result = await gw.gateway.channels.inbox.receive(dm("let me in", "m1", sender="u7"), wait=True)
    assert result["status"] == "blocked" and "not in allowFrom" in result["reason"]
    assert test_channel.sent == [] and fake.requests == []


async def test_group_messages_wake_the_agent_only_when_mentioned(
    client: GatewayClient, test_channel: TestChannel, fake: FakeProvider, gw: RunningGateway
) -> None:
    """In a group, chatter is ignored; a mention is answered."""
    await client.call("config.set", {"path": "channels.test", "value": {"allowFrom": ["u1"]}})
    ignored = await gw.gateway.channels.inbox.receive(group("just chatting", "g-1"), wait=True)
    assert ignored == {"status": "ignored", "reason": "not mentioned"}
    fake.enqueue("At your service.")
    started = await gw.gateway.channels.inbox.receive(
        group("@bot help", "g-2", mentioned=True), wait=True
    )
    assert started["status"] == "started" and started["sessionKey"] == "agent:main:test:group:g1"
    await until(lambda: test_channel.texts("g1") == ["At your service."], "the group answer")
    assert "· Ann (guest)] @bot help" in fake.requests[0].messages[-1]["content"]


async def test_commands_and_directives_answer_in_the_chat(
    client: GatewayClient, test_channel: TestChannel, fake: FakeProvider
) -> None:
    """/status answers in channel format; /t:high is acknowledged; neither wakes the agent."""
    await open_policy(client)
    await test_channel.inject(dm("/status", "m1"))
    await until(lambda: test_channel.texts("u1"), "the status")
    assert test_channel.texts("u1")[0].startswith("**Session Status**\n• Session: agent:main:main")
    await test_channel.inject(dm("/t:high", "m2"))
    await until(lambda: len(test_channel.texts("u1")) == 2, "the ack")
    assert test_channel.texts("u1")[1] == "_Thinking: high_"
    assert fake.requests == []


async def test_errors_are_told_to_the_peer_in_one_line(
    client: GatewayClient, test_channel: TestChannel, fake: FakeProvider
) -> None:
    """A failed run sends a short warning line instead of silence."""
    await open_policy(client)
    fake.enqueue(Fail(ProviderFailed("anthropic is overloaded\nplease retry")))
    await test_channel.inject(dm("hi", "m1"))
    await until(lambda: test_channel.texts("u1"), "the error line")
    assert test_channel.texts("u1") == ["⚠️ anthropic is overloaded please retry"]
    assert any(typing for _, _, typing in test_channel.typing)  # shown while it worked


async def test_media_reach_the_model(
    client: GatewayClient, test_channel: TestChannel, fake: FakeProvider
) -> None:
    """An image is stored and shown to the model; a document becomes a note."""
    await open_policy(client)
    media = (
        Media("image", "image/png", data=PNG),
        Media("document", "application/pdf", data=PNG, filename="cv.pdf"),
    )
    await test_channel.inject(dm("look", "m1", media=media))
    await until(lambda: test_channel.texts("u1"), "the answer")
    sent = fake.requests[0].messages[-1]
    blocks = sent["content"]
    assert any(b["type"] == "image" and b["data"] == PNG for b in blocks)
    text = next(b["text"] for b in blocks if b["type"] == "text")
    assert "look" in text and "[Document attached: cv.pdf" in text


async def test_long_replies_are_split_before_the_limit(
    client: GatewayClient, test_channel: TestChannel, fake: FakeProvider
) -> None:
    """A 9,000-character reply reaches a 4,000-character channel in three pieces."""
    await open_policy(client)
    fake.enqueue(" ".join(["word"] * 1800))
    await test_channel.inject(dm("talk a lot", "m1"))
    await until(lambda: len(test_channel.texts("u1")) == 3, "three pieces")
    pieces = test_channel.texts("u1")
    assert all(len(p) <= 4000 for p in pieces) and " ".join(pieces) == " ".join(["word"] * 1800)
    assert [m.reply_to_id for _, m in test_channel.sent] == ["m1", None, None]


async def test_a_repeated_message_id_is_processed_once(
    client: GatewayClient, test_channel: TestChannel, fake: FakeProvider, gw: RunningGateway
) -> None:
    """The journal de-duplicates redelivered messages (same channel, account and id)."""
    await open_policy(client)
    await test_channel.inject(dm("once", "m1"))
    again = await gw.gateway.channels.inbox.receive(dm("once", "m1"), wait=True)
    assert again == {"status": "duplicate"}
    await until(lambda: test_channel.texts("u1"), "the answer")
    assert len(fake.requests) == 1


async def test_a_message_is_answered_exactly_once_across_a_crash(tmp_path: Path) -> None:
    """The gateway dies after receiving a message and before replying: after the restart
    the account is running again and the message is answered, once."""
    database = tmp_path / "data" / "gsv.db"
    first = FakeProvider()
    first.enqueue("working", asyncio.Event())  # the reply never finishes before the crash
    async with serve(ServerConfig(database=database, provider_factory=first.factory), port=0) as gw:
        async with GatewayClient(gw.url, token=gw.token) as c:
            await open_policy(c)
            await c.call("channel.start", {"channel": "test"})
        adapter = gw.gateway.channels.adapters["test"]
        await adapter.inject(dm("are you there?", "m1"))  # type: ignore[attr-defined]
        await first.streaming.wait()
    second = FakeProvider()
    second.enqueue("Yes, back now.")
    async with serve(
        ServerConfig(database=database, provider_factory=second.factory), port=0
    ) as gw:
        adapter = gw.gateway.channels.adapters["test"]
        assert isinstance(adapter, TestChannel) and adapter.status()  # restarted by itself
        await until(lambda: adapter.texts("u1"), "the answer after the restart")
        await asyncio.sleep(0.2)  # nothing else may follow
        history = await gw.gateway.sessions.store.messages("agent:main:main")
    assert adapter.texts("u1") == ["Yes, back now."]
    assert [m["content"] for m in history if m["role"] == "user"] == [
        "[test" + history[0]["content"][5:]
    ]
    assert second.requests[0].messages[-1]["content"].endswith("are you there?")


async def test_external_adapters_speak_over_websocket(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider
) -> None:
    """A channel-mode connection sends channel.inbound and receives channel.outbound; it
    cannot speak for another account."""
    await client.call("config.set", {"path": "channels.ext", "value": {"dmPolicy": "open"}})
    fake.enqueue("hello from the agent")
    async with await open_raw(gw.url) as ws:
        await handshake(ws, mode="channel", client_id="bridge", channel="ext", account_id="a1")
        inbound = {"channel": "ext", "accountId": "a1", "peer": {"kind": "dm", "id": "p1"},
                   "message": {"id": "x1", "text": "hi"}}  # fmt: skip
        reply = await request(ws, "channel.inbound", inbound)
        assert reply["payload"]["status"] == "started"
        while True:
            frame = json.loads(await ws.recv())
            if frame.get("event") == "channel.outbound":
                break
        assert frame["payload"]["message"] == {"text": "hello from the agent", "replyToId": "x1"}
        # the real session the reply belongs to, never ""
        assert frame["payload"]["sessionKey"] == reply["payload"]["sessionKey"] != ""
        assert frame["payload"]["peer"] == {"kind": "dm", "id": "p1"}
        spoof = await request(ws, "channel.inbound", {**inbound, "accountId": "other"})
        assert spoof["error"]["code"] == 403
        listed = await client.call("channels.list")
        assert {"channel": "ext", "accountId": "a1"}.items() <= listed["channels"][0].items()


async def test_message_tool_defaults_to_the_current_conversation(
    client: GatewayClient, test_channel: TestChannel, fake: FakeProvider
) -> None:
    """gsv__Message without channel/to writes to the peer the run came from."""
    await open_policy(client)
    fake.enqueue(call("gsv__Message", {"text": "a side note"}))
    fake.enqueue("done")
    await test_channel.inject(dm("ping me", "m1"))
    await until(lambda: "done" in test_channel.texts("u1"), "the final answer")
    assert test_channel.texts("u1") == ["a side note", "done"]


async def test_channel_rpc_errors(client: GatewayClient) -> None:
    """Unknown channel 404; a refused start 400 with its message; bad names 400."""
    from gsv_core.errors import InvalidParams
    from gsv_core.errors import NotFound

    with pytest.raises(NotFound, match="Unknown channel: nope"):
        await client.call("channel.start", {"channel": "nope"})
    with pytest.raises(InvalidParams, match="refused to start: broken"):
        await client.call("channel.start", {"channel": "test", "config": {"failStart": "broken"}})
    with pytest.raises(InvalidParams):
        await client.call("channel.status", {"channel": "Bad Name"})
    status = await client.call("channel.status", {"channel": "test"})
    assert status == {"channel": "test", "accounts": []}


async def test_a_flood_of_strangers_does_not_hold_up_the_owner(
    client: GatewayClient, test_channel: TestChannel, fake: FakeProvider
) -> None:
    """20 unknown senders at once: their pairing prompts wait on their own rate-limit lane,
    beside the queue, so the owner's reply goes out while most prompts still
    wait. With one send a minute, a shared lane would hold the owner for 20 minutes."""
    settings = {"dmPolicy": "pairing", "allowFrom": ["owner"], "sendRatePerMinute": 1}
    await client.call("config.set", {"path": "channels.test", "value": settings})
    for n in range(20):
        await test_channel.inject(dm("let me in", f"s{n}", sender=f"stranger{n}"))
    fake.enqueue("hello, owner")
    await test_channel.inject(dm("status?", "o1", sender="owner"))
    await until(lambda: "hello, owner" in test_channel.texts("owner"), "the owner's reply")
    prompted = sum(1 for n in range(20) if test_channel.texts(f"stranger{n}"))
    assert prompted < 20  # the strangers' lane is still waiting: it never blocked the owner
    assert len((await client.call("pair.list"))["pairs"]) == 20
