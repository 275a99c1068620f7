"""A fake Discord behind the adapter's seam (`DiscordGateway`), a recording sink, recorded
sleeps, and the people, channels and messages the Discord tests use."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from typing import Any

from gsv_core.channels.base import InboundMessage
from gsv_core.channels.discord.seam import TOKEN_REJECTED
from gsv_core.channels.discord.seam import DiscordAuthor
from gsv_core.channels.discord.seam import DiscordEvents
from gsv_core.channels.discord.seam import DiscordMessage
from gsv_core.channels.discord.seam import DiscordPost
from gsv_core.channels.discord.seam import DiscordPress
from gsv_core.errors import NotFound
from gsv_core.errors import Unauthorized
from gsv_core.errors import Unavailable
from tests.fakes.channel_sink import RecordingSink

TOKEN = "MTIzNDU2Nzg5MDEyMzQ1Njc4.GhXyZa.fake-discord-secret_part-0123456789"
BOT_ID = "900000000000000001"
GUILD = "700000000000000001"
DM_CHANNEL = "555000000000000001"
GENERAL = "300000000000000001"
THREAD = "301000000000000001"
ADA = DiscordAuthor("111000000000000001", "Ada L", "ada")
BOB = DiscordAuthor("222000000000000002", "Bob", "bob")
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24


# -- the fake seam ---------------------------------------------------------------------


# what the fake records of each message sent: the post itself
Sent = DiscordPost


@dataclass
class FakeDiscord:
    """A `DiscordGateway` for tests: scripted login and run outcomes, a connection the
    test can drop, injected messages and button presses, recorded sends, edits (which
    replace a sent message's text and drop its buttons) and typing."""

    good_token: str = TOKEN
    token: str = ""
    bot_user_id: str | None = None
    bot_name: str | None = None
    login_failures: list[Exception] = field(default_factory=list)
    run_failures: list[Exception] = field(default_factory=list)
    send_failures: list[Exception] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    sent: list[Sent] = field(default_factory=list)
    typed: list[str] = field(default_factory=list)
    edits: list[tuple[str, str, str]] = field(default_factory=list)  # channel, message, text
    fetched: list[str] = field(default_factory=list)
    runs: int = 0
    closes: int = 0
    events: DiscordEvents | None = None
    _end: asyncio.Future[None] | None = None

    def build(self, token: str) -> FakeDiscord:
        """The adapter's gateway factory."""
        self.token = token
        return self

    async def login(self) -> None:
        if self.login_failures:
            raise self.login_failures.pop(0)
        if self.token != self.good_token:
            raise Unauthorized(TOKEN_REJECTED)
        self.bot_user_id, self.bot_name = BOT_ID, "gsv-bot"

    async def run(self, events: DiscordEvents) -> None:
        self.runs += 1
        await self.login()
        if self.run_failures:
            raise self.run_failures.pop(0)
        self.events = events
        self._end = asyncio.get_running_loop().create_future()
        events.connection(True, None)
        await self._end

    def drop(self, error: Exception) -> None:
        """The network goes: the running `run` raises `error`."""
        assert self._end is not None and not self._end.done()
        self._end.set_exception(error)

    async def close(self) -> None:
        self.closes += 1
        if self._end is not None and not self._end.done():
            self._end.set_result(None)

    async def send(self, post: DiscordPost) -> str:
        if self.send_failures:
            raise self.send_failures.pop(0)
        self.sent.append(post)
        return self.message_id(len(self.sent) - 1)

    @staticmethod
    def message_id(index: int) -> str:
        """The id `send` gave the message at `sent[index]`."""
        return f"80000000000000{index + 1:04d}"

    async def edit(self, channel_id: str, message_id: str, text: str) -> None:
        index = next((i for i in range(len(self.sent)) if self.message_id(i) == message_id), None)
        if index is None or self.sent[index].channel_id != channel_id:
            raise NotFound(f"discord has no channel {channel_id} the bot can see")
        self.sent[index] = replace(self.sent[index], text=text, actions=())
        self.edits.append((channel_id, message_id, text))

    async def press(self, press: DiscordPress) -> str | None:
        """A button press as discord.py would report it; the adapter's answer."""
        assert self.events is not None, "not running"
        return await self.events.press(press)

    async def typing(self, channel_id: str) -> None:
        if channel_id == "broken":
            raise OSError("typing failed")
        self.typed.append(channel_id)

    async def fetch_attachment(self, url: str, max_bytes: int) -> bytes:
        self.fetched.append(url)
        if url not in self.files:
            raise Unavailable("discord attachment download failed: HTTP 404")
        return self.files[url][: max_bytes + 1]

    async def inject(self, message: DiscordMessage) -> None:
        assert self.events is not None, "not running"
        await self.events.message(message)

    def texts(self, channel_id: str | None = None) -> list[str]:
        return [s.text for s in self.sent if channel_id in (None, s.channel_id)]


def dm(text: str, msg_id: str = "100000000000000001", **extra: Any) -> DiscordMessage:
    fields: dict[str, Any] = {"author": ADA, "timestamp_ms": 1_714_564_800_000, **extra}
    return DiscordMessage(id=msg_id, channel_id=DM_CHANNEL, kind="dm", content=text, **fields)


def in_guild(text: str, msg_id: str, **extra: Any) -> DiscordMessage:
    fields: dict[str, Any] = {
        "author": ADA, "timestamp_ms": 1_714_564_800_000, "channel_id": GENERAL,
        "kind": "channel", "channel_name": "general", "guild_id": GUILD, **extra,
    }  # fmt: skip
    return DiscordMessage(id=msg_id, content=text, **fields)


async def receive(
    fake: FakeDiscord, sink: RecordingSink, message: DiscordMessage
) -> InboundMessage:
    before = len(sink.messages)
    await fake.inject(message)
    assert len(sink.messages) == before + 1, "the message was not handed over"
    return sink.messages[-1]
