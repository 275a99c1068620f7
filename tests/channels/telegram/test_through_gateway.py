"""Telegram DMs and groups answered through a real gateway with the fake LLM."""

from __future__ import annotations

from pathlib import Path

from gsv_core.client import GatewayClient
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from tests.fakes.provider import FakeProvider
from tests.fakes.telegram_adapter import bot_config
from tests.fakes.telegram_adapter import called
from tests.fakes.telegram_api import ADA
from tests.fakes.telegram_api import BOB
from tests.fakes.telegram_api import FakeTelegramAPI
from tests.fakes.telegram_api import group_chat
from tests.fakes.telegram_api import mention
from tests.fakes.telegram_api import private_chat


async def test_a_telegram_dm_is_answered_through_the_gateway(
    api: FakeTelegramAPI, tmp_path: Path
) -> None:
    """A DM on the fake Bot API reaches the agent (fake LLM); its Markdown reply goes back
    as HTML answering the DM, with typing shown while the run works."""
    fake = FakeProvider()
    config = ServerConfig(database=tmp_path / "gw" / "gsv.db", provider_factory=fake.factory)
    async with serve(config, port=0) as gw, GatewayClient(gw.url, token=gw.token) as client:
        value = {**bot_config(api), "dmPolicy": "open"}
        await client.call("config.set", {"path": "channels.telegram", "value": value})
        await client.call("channel.start", {"channel": "telegram"})
        fake.enqueue("**Hello** Ada & co")
        message = api.message(private_chat(ADA), "hi agent")
        api.enqueue_update(message=message)
        reply = await called(api, lambda c: c.method == "sendMessage")
        assert reply.params["text"] == "<b>Hello</b> Ada &amp; co"
        assert reply.params["chat_id"] == ADA["id"]
        assert reply.params["reply_parameters"]["message_id"] == message["message_id"]
        assert api.calls_to("sendChatAction")[0].params["action"] == "typing"
        assert "hi agent" in str(fake.requests[0].messages[-1]["content"])
        status = await client.call("channel.status", {"channel": "telegram"})
        assert status["accounts"][0]["connected"] is True
        assert status["accounts"][0]["extra"]["botUsername"] == "gsv_test_bot"
        await client.call("channel.stop", {"channel": "telegram"})


async def test_a_stranger_pairs_then_talks_in_dms_and_groups_through_the_gateway(
    api: FakeTelegramAPI, tmp_path: Path
) -> None:
    """Default policy: Ada's first DM gets the pairing prompt and wakes no model; after
    `pair.approve` she is welcomed and answered. In a group, her message without a mention
    is not answered; with one it is; Bob (never approved) is not, even mentioning the bot."""
    fake = FakeProvider()
    config = ServerConfig(database=tmp_path / "gw" / "gsv.db", provider_factory=fake.factory)
    async with serve(config, port=0) as gw, GatewayClient(gw.url, token=gw.token) as client:
        await client.call("config.set", {"path": "channels.telegram", "value": bot_config(api)})
        await client.call("channel.start", {"channel": "telegram"})
        api.enqueue_update(message=api.message(private_chat(ADA), "let me in"))
        prompt = await called(api, lambda c: c.method == "sendMessage")
        assert prompt.params["text"] == (
            "Your message has been received. Awaiting approval from the owner."
        )
        pairs = (await client.call("pair.list"))["pairs"]
        assert list(pairs) == [f"telegram:{ADA['id']}"] and fake.requests == []
        await client.call("pair.approve", {"channel": "telegram", "senderId": str(ADA["id"])})
        welcome = await called(api, lambda c: "now connected" in str(c.params.get("text")))
        assert welcome.params["chat_id"] == ADA["id"]

        fake.enqueue("Hi Ada.")
        api.enqueue_update(message=api.message(private_chat(ADA), "hello"))
        await called(api, lambda c: c.params.get("text") == "Hi Ada.")

        group = group_chat()
        api.enqueue_update(message=api.message(group, "just chatting"))
        bob_text = "@gsv_test_bot open up"
        bob = api.message(group, bob_text, sender=BOB, entities=mention(bob_text, "@gsv_test_bot"))
        api.enqueue_update(message=bob)
        fake.enqueue("Hello team.")
        ada_text = "@gsv_test_bot what's new?"
        ada = api.message(group, ada_text, entities=mention(ada_text, "@gsv_test_bot"))
        api.enqueue_update(message=ada)
        answer = await called(api, lambda c: c.params.get("text") == "Hello team.")
        assert answer.params["chat_id"] == group["id"]
        assert answer.params["reply_parameters"]["message_id"] == ada["message_id"]
        assert len(fake.requests) == 2, "neither the unmentioned line nor Bob woke the model"
        assert "what's new?" in str(fake.requests[1].messages[-1]["content"])
        await client.call("channel.stop", {"channel": "telegram"})
