"""A Discord user pairs and chats with the agent on a real gateway (fake seam, fake LLM)."""

from __future__ import annotations

from pathlib import Path

from gsv_core.channels.discord import MAX_TEXT
from gsv_core.channels.discord import DiscordChannel
from gsv_core.client import GatewayClient
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from tests.fakes.discord_seam import ADA
from tests.fakes.discord_seam import BOT_ID
from tests.fakes.discord_seam import DM_CHANNEL
from tests.fakes.discord_seam import TOKEN
from tests.fakes.discord_seam import FakeDiscord
from tests.fakes.discord_seam import Sent
from tests.fakes.discord_seam import dm
from tests.fakes.provider import FakeProvider
from tests.waiting import until


async def test_a_discord_user_pairs_and_chats_with_the_agent(tmp_path: Path) -> None:
    """On a real gateway: an unknown DM gets the pairing prompt, approval welcomes, the
    agent's long answer reaches Discord in 2,000-character pieces replying to the DM,
    and the token is masked in config.get."""
    provider, discord_fake = FakeProvider(), FakeDiscord()
    config = ServerConfig(database=tmp_path / "data" / "gsv.db", provider_factory=provider.factory)
    async with serve(config, port=0) as gw, GatewayClient(gw.url, token=gw.token) as client:
        gw.gateway.channels.adapters["discord"] = DiscordChannel(discord_fake.build)
        settings = {"botToken": TOKEN, "sendRatePerMinute": 600}
        await client.call("config.set", {"path": "channels.discord", "value": settings})
        await client.call("channel.start", {"channel": "discord"})
        [status] = (await client.call("channel.status", {"channel": "discord"}))["accounts"]
        assert status["connected"] and status["extra"]["botId"] == BOT_ID

        await discord_fake.inject(dm("hello?", "100000000000000001"))
        await until(lambda: discord_fake.sent, "the pairing prompt")
        assert discord_fake.sent == [
            Sent(DM_CHANNEL, "Your message has been received. Awaiting approval from the owner.",
                 "100000000000000001", None),
        ]  # fmt: skip
        approved = await client.call("pair.approve", {"channel": "discord", "senderId": ADA.id})
        assert approved["senderName"] == "Ada L"
        assert discord_fake.texts()[-1].startswith("You're now connected!")

        answer = " ".join(f"w{i:03d}" for i in range(900))  # 4,499 characters
        provider.enqueue(answer)
        await discord_fake.inject(dm("tell me everything", "100000000000000002"))
        await until(lambda: len(discord_fake.sent) == 5, "three pieces of the answer")
        pieces = discord_fake.sent[2:]
        assert all(len(p.text) <= MAX_TEXT and p.channel_id == DM_CHANNEL for p in pieces)
        assert " ".join(p.text for p in pieces) == answer
        assert [p.reply_to for p in pieces] == ["100000000000000002", None, None]
        assert provider.requests[0].messages[-1]["content"].endswith("tell me everything")
        masked = await client.call("config.get", {"path": "channels.discord"})
        assert masked["value"]["botToken"] == "***"
