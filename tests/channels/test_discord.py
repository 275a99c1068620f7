"""The Discord adapter through its seam (`DiscordGateway`): a fake gateway stands in for
discord.py (which has no base-URL option) to test receiving (DMs, server channels,
threads, mentions, replies, attachments), sending (replies, threads, 2,000-character
pieces), typing, status, reconnecting, the token; one test runs it on a real gateway
with the fake LLM. The real discord.py wrapper is tested as far as works offline:
intents, event wiring, converting discord.py messages built from gateway payloads, and
attachment downloads from a local HTTP server. Its login, connect, send and typing need
Discord itself and are not tested here."""

from __future__ import annotations

import asyncio
import base64
import logging
import random
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from gsv_core.channels.base import AccountStatus, Action, InboundMessage, OutboundMessage, Peer
from gsv_core.channels.discord import MAX_TEXT, DiscordChannel
from gsv_core.channels.discord.seam import (
    INTENT_MISSING,
    TOKEN_REJECTED,
    DiscordAttachment,
    DiscordAuthor,
    DiscordEvents,
    DiscordMessage,
    DiscordPress,
    DiscordPyGateway,
    message_from_discord,
)
from gsv_core.client import GatewayClient
from gsv_core.errors import Forbidden, InvalidParams, NotFound, Unauthorized, Unavailable
from gsv_core.gateway.server import ServerConfig, serve
from tests.fakes.provider import FakeProvider

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


@dataclass
class Sent:
    channel_id: str
    text: str
    reply_to: str | None
    thread_id: str | None
    actions: tuple[Action, ...] = ()


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

    async def send(
        self,
        channel_id: str,
        text: str,
        reply_to: str | None,
        thread_id: str | None,
        actions: tuple[Action, ...] = (),
    ) -> str:
        if self.send_failures:
            raise self.send_failures.pop(0)
        self.sent.append(Sent(channel_id, text, reply_to, thread_id, actions))
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


@dataclass
class RecordingSink:
    """A ChannelSink that records; it can fail a number of hand-overs."""

    messages: list[InboundMessage] = field(default_factory=list)
    statuses: list[AccountStatus] = field(default_factory=list)
    failures: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def inbound(self, message: InboundMessage) -> None:
        if self.failures:
            self.failures -= 1
            raise RuntimeError("journal write failed")
        self.messages.append(message)
        self.changed.set()

    def status_changed(self, channel: str, status: AccountStatus) -> None:
        assert channel == "discord"
        self.statuses.append(status)
        self.changed.set()

    async def wait_for(self, predicate: Callable[[], Any]) -> None:
        async with asyncio.timeout(15):
            while not predicate():
                self.changed.clear()
                await self.changed.wait()


@dataclass
class Sleeps:
    """The adapter's injected sleep: records each wait and only yields."""

    waits: list[float] = field(default_factory=list)

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        await asyncio.sleep(0)


def dm(text: str, msg_id: str = "100000000000000001", **extra: Any) -> DiscordMessage:
    fields: dict[str, Any] = {"author": ADA, "timestamp_ms": 1_714_564_800_000, **extra}
    return DiscordMessage(id=msg_id, channel_id=DM_CHANNEL, kind="dm", content=text, **fields)


def in_guild(text: str, msg_id: str, **extra: Any) -> DiscordMessage:
    fields: dict[str, Any] = {
        "author": ADA, "timestamp_ms": 1_714_564_800_000, "channel_id": GENERAL,
        "kind": "channel", "channel_name": "general", "guild_id": GUILD, **extra,
    }  # fmt: skip
    return DiscordMessage(id=msg_id, content=text, **fields)


@pytest.fixture
def fake() -> FakeDiscord:
    return FakeDiscord()


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def sink() -> RecordingSink:
    return RecordingSink()


@pytest.fixture
async def channel(fake: FakeDiscord, sleeps: Sleeps) -> AsyncIterator[DiscordChannel]:
    adapter = DiscordChannel(
        fake.build, sleep=sleeps, rng=random.Random(7), max_attachment_bytes=1000
    )
    yield adapter
    for status in adapter.status():
        await adapter.stop(status.account_id)


@pytest.fixture
async def running(
    channel: DiscordChannel, fake: FakeDiscord, sink: RecordingSink
) -> DiscordChannel:
    await channel.start("default", {"botToken": TOKEN}, sink)
    await sink.wait_for(lambda: channel.status("default")[0].connected)
    return channel


async def receive(
    fake: FakeDiscord, sink: RecordingSink, message: DiscordMessage
) -> InboundMessage:
    before = len(sink.messages)
    await fake.inject(message)
    assert len(sink.messages) == before + 1, "the message was not handed over"
    return sink.messages[-1]


# -- receiving ---------------------------------------------------------------------------


async def test_a_dm_reaches_the_sink_with_peer_sender_and_ids(
    running: DiscordChannel, fake: FakeDiscord, sink: RecordingSink
) -> None:
    """A DM is peer dm (the DM channel id), the author is the sender; no mention needed."""
    got = await receive(fake, sink, dm("hello bot"))
    assert got.channel == "discord" and got.account_id == "default"
    assert got.peer == Peer("dm", DM_CHANNEL, "Ada L", "ada")
    assert (got.sender.id, got.sender.name, got.sender.handle) == (ADA.id, "Ada L", "ada")
    assert (got.message_id, got.text, got.timestamp) == (
        "100000000000000001",
        "hello bot",
        1_714_564_800_000,
    )
    assert not got.was_mentioned and not got.reply_to_bot and got.media == ()


async def test_status_reports_the_connected_bot(
    running: DiscordChannel, fake: FakeDiscord, sink: RecordingSink
) -> None:
    """Connected, authenticated, mode websocket, the bot's id and name, last activity."""
    [status] = running.status("default")
    assert (status.connected, status.authenticated, status.mode, status.error) == (
        True,
        True,
        "websocket",
        None,
    )
    assert status.extra == {"botId": BOT_ID, "botName": "gsv-bot"}
    assert status.last_activity is None
    await receive(fake, sink, dm("hi"))
    assert running.status("default")[0].last_activity is not None
    assert running.status("other") == []


async def test_guild_messages_are_mentioned_only_when_the_bot_is(
    running: DiscordChannel, fake: FakeDiscord, sink: RecordingSink
) -> None:
    """A server channel is peer `channel`; mentioning the bot (not someone else) counts."""
    plain = await receive(fake, sink, in_guild("just chatting", "1"))
    assert plain.peer == Peer("channel", GENERAL, "general")
    assert not plain.was_mentioned and plain.mentioned_ids == ()
    other = await receive(fake, sink, in_guild("@Bob look", "2", mention_ids=(BOB.id,)))
    assert not other.was_mentioned and other.mentioned_ids == (BOB.id,)
    to_bot = await receive(fake, sink, in_guild("@gsv-bot help", "3", mention_ids=(BOT_ID,)))
    assert to_bot.was_mentioned and to_bot.text == "@gsv-bot help"


async def test_a_reply_to_the_bot_counts_as_a_mention(
    running: DiscordChannel, fake: FakeDiscord, sink: RecordingSink
) -> None:
    """Replying to one of the bot's messages wakes it; replying to a person does not."""
    reply = {"reply_to_id": "400", "reply_to_text": "earlier answer"}
    to_bot = await receive(fake, sink, in_guild("and?", "1", reply_to_author_id=BOT_ID, **reply))
    assert to_bot.reply_to_bot and to_bot.was_mentioned
    assert (to_bot.reply_to_id, to_bot.reply_to_text) == ("400", "earlier answer")
    to_bob = await receive(fake, sink, in_guild("and?", "2", reply_to_author_id=BOB.id, **reply))
    assert not to_bob.reply_to_bot and not to_bob.was_mentioned


async def test_a_thread_message_is_a_thread_peer_and_replies_go_there(
    running: DiscordChannel, fake: FakeDiscord, sink: RecordingSink
) -> None:
    """A thread is its own peer (its id, thread_id too); the answer is posted in it."""
    message = in_guild(
        "in a thread", "7", kind="thread", channel_id=THREAD, channel_name="plans",
        parent_id=GENERAL, mention_ids=(BOT_ID,),
    )  # fmt: skip
    got = await receive(fake, sink, message)
    assert got.peer == Peer("thread", THREAD, "plans", thread_id=THREAD)
    await running.send("default", OutboundMessage(got.peer, "answer", reply_to_id="7"))
    assert fake.sent == [Sent(THREAD, "answer", "7", THREAD)]


async def test_own_messages_other_bots_and_empty_messages_are_ignored(
    running: DiscordChannel, fake: FakeDiscord, sink: RecordingSink
) -> None:
    """The bot's own posts, other bots' and messages without text or files are dropped."""
    await fake.inject(dm("echo", author=DiscordAuthor(BOT_ID, "gsv-bot", "gsv-bot", bot=True)))
    await fake.inject(dm("beep", author=DiscordAuthor("333000000000000003", "B", "b", bot=True)))
    await fake.inject(dm(""))
    assert sink.messages == []


async def test_attachments_arrive_as_base64_media(
    running: DiscordChannel, fake: FakeDiscord, sink: RecordingSink
) -> None:
    """Image, voice message and an untyped file are downloaded and typed by mime."""
    fake.files = {"https://cdn/a.png": PNG, "https://cdn/v.ogg": b"OggS", "https://cdn/x": b"%"}
    files = (
        DiscordAttachment("https://cdn/a.png", "a.png", len(PNG), "image/png"),
        DiscordAttachment("https://cdn/v.ogg", "voice.ogg", 4, "audio/ogg", duration=2.5),
        DiscordAttachment("https://cdn/x", "notes", 1),
    )
    got = await receive(fake, sink, dm("", attachments=files))
    assert [(m.type, m.mime_type, m.filename, m.size) for m in got.media] == [
        ("image", "image/png", "a.png", len(PNG)),
        ("audio", "audio/ogg", "voice.ogg", 4),
        ("document", "application/octet-stream", "notes", 1),
    ]
    assert base64.b64decode(got.media[0].data or "") == PNG
    assert got.media[1].duration == 2.5 and got.text == ""


async def test_oversized_or_unreachable_attachments_become_notes(
    running: DiscordChannel, fake: FakeDiscord, sink: RecordingSink
) -> None:
    """Over the cap by declared or real size, or not downloadable: a note in the text."""
    fake.files = {"https://cdn/liar": b"x" * 5000}
    files = (
        DiscordAttachment("https://cdn/huge", "huge.mov", 5_000_000, "video/mp4"),
        DiscordAttachment("https://cdn/liar", "liar.bin", 10),
        DiscordAttachment("https://cdn/gone", "gone.png", 10, "image/png"),
    )
    got = await receive(fake, sink, dm("see", attachments=files))
    assert got.media == ()
    lines = got.text.splitlines()
    assert lines[0] == "see"
    assert lines[1].startswith("[attachment skipped: huge.mov is 4.8 MB, over the")
    assert lines[2].startswith("[attachment skipped: liar.bin is 0.0 MB")
    assert lines[3] == "[attachment not downloaded: gone.png]"
    assert fake.fetched == ["https://cdn/liar", "https://cdn/gone"]  # the huge one never


async def test_a_failed_hand_over_is_retried_then_logged_as_lost(
    running: DiscordChannel,
    fake: FakeDiscord,
    sink: RecordingSink,
    sleeps: Sleeps,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Discord never redelivers: the sink is asked again, and a loss is logged loudly."""
    sink.failures = 1
    await fake.inject(dm("second try", "1"))
    assert [m.text for m in sink.messages] == ["second try"] and len(sleeps.waits) == 1
    sink.failures = 3
    await fake.inject(dm("never", "2"))
    assert [m.text for m in sink.messages] == ["second try"]
    assert any(
        r.levelno == logging.ERROR and "lost" in r.getMessage() and "2" in r.getMessage()
        for r in caplog.records
    )


# -- sending -----------------------------------------------------------------------------


async def test_send_replies_to_the_inbound_message(
    running: DiscordChannel, fake: FakeDiscord
) -> None:
    """The reply reference and the channel reach the seam; the message id comes back."""
    peer = Peer("dm", DM_CHANNEL)
    message_id = await running.send("default", OutboundMessage(peer, "hi Ada", reply_to_id="42"))
    assert fake.sent == [Sent(DM_CHANNEL, "hi Ada", "42", None)]
    assert message_id == "800000000000000001"
    assert running.status("default")[0].last_activity is not None


async def test_text_over_2000_characters_is_split_and_only_the_first_piece_replies(
    running: DiscordChannel, fake: FakeDiscord
) -> None:
    """5,000 characters go out in three pieces of at most 2,000, nothing lost."""
    words = " ".join(f"w{i:03d}" for i in range(1000))  # 4,999 characters
    await running.send("default", OutboundMessage(Peer("dm", DM_CHANNEL), words, "42"))
    assert len(fake.sent) == 3 and all(len(s.text) <= MAX_TEXT for s in fake.sent)
    assert " ".join(fake.texts()) == words
    assert [s.reply_to for s in fake.sent] == ["42", None, None]


async def test_send_errors_are_gsv_errors_without_the_token(
    running: DiscordChannel, fake: FakeDiscord
) -> None:
    """The seam's gsv errors pass through (masked); anything else becomes Unavailable."""
    peer = Peer("channel", GENERAL)
    fake.send_failures = [
        Forbidden(f"discord refused to post in channel {GENERAL}: Missing Access"),
        RuntimeError(f"session broke, token {TOKEN}"),
    ]
    with pytest.raises(Forbidden, match="Missing Access"):
        await running.send("default", OutboundMessage(peer, "hi"))
    with pytest.raises(Unavailable, match="discord send failed") as caught:
        await running.send("default", OutboundMessage(peer, "hi"))
    assert TOKEN not in str(caught.value) and "<bot-token>" in str(caught.value)


async def test_sending_on_an_account_that_is_not_running_fails(channel: DiscordChannel) -> None:
    """No account, no send: a clear Unavailable."""
    with pytest.raises(Unavailable, match="discord account 'default' is not running"):
        await channel.send("default", OutboundMessage(Peer("dm", DM_CHANNEL), "hi"))


async def test_typing_is_shown_only_when_on_and_never_raises(
    running: DiscordChannel, fake: FakeDiscord
) -> None:
    """typing=True posts a typing indicator (in the thread for threads); off and failures
    are quiet."""
    await running.set_typing("default", Peer("dm", DM_CHANNEL), True)
    await running.set_typing("default", Peer("thread", THREAD, thread_id=THREAD), True)
    await running.set_typing("default", Peer("dm", DM_CHANNEL), False)
    await running.set_typing("default", Peer("dm", "broken"), True)
    await running.set_typing("nobody", Peer("dm", DM_CHANNEL), True)
    assert fake.typed == [DM_CHANNEL, THREAD]


# -- the token, connecting, reconnecting -------------------------------------------------


async def test_a_bad_token_is_a_clear_error_and_status(
    channel: DiscordChannel, fake: FakeDiscord, sink: RecordingSink
) -> None:
    """Discord's rejection of the token is Unauthorized, named plainly; status says so."""
    with pytest.raises(Unauthorized, match=TOKEN_REJECTED) as caught:
        await channel.start("default", {"botToken": "wrong.token.value"}, sink)
    assert "channels.discord.botToken" in str(caught.value)
    assert "wrong.token.value" not in str(caught.value)
    [status] = channel.status("default")
    assert (status.connected, status.authenticated, status.error) == (False, False, TOKEN_REJECTED)
    assert sink.statuses[-1].error == TOKEN_REJECTED and fake.closes == 1
    assert fake.runs == 0
    with pytest.raises(Unavailable):
        await channel.send("default", OutboundMessage(Peer("dm", DM_CHANNEL), "hi"))


@pytest.mark.parametrize("config", [{}, {"botToken": "  "}, {"botToken": 42}])
async def test_a_missing_token_is_invalid_params(
    channel: DiscordChannel, sink: RecordingSink, config: dict[str, Any]
) -> None:
    """No token: refused before anything connects, with the config key to set."""
    with pytest.raises(InvalidParams, match=r"gsv config set channels\.discord\.botToken"):
        await channel.start("default", config, sink)
    assert channel.status() == []


async def test_an_unreachable_discord_at_start_keeps_trying(
    channel: DiscordChannel, fake: FakeDiscord, sink: RecordingSink, sleeps: Sleeps
) -> None:
    """A network failure at login is not fatal: after a backoff the account connects."""
    fake.login_failures = [OSError("Cannot connect to host discord.com:443")]
    await channel.start("default", {"botToken": TOKEN}, sink)
    assert sink.statuses[0].error == "discord unreachable: Cannot connect to host discord.com:443"
    await sink.wait_for(lambda: channel.status("default")[0].connected)
    assert len(sleeps.waits) == 1 and 0.5 <= sleeps.waits[0] <= 1.0
    assert channel.status("default")[0].error is None
    assert await receive(fake, sink, dm("made it"))


async def test_network_loss_is_retried_with_backoff_until_connected(
    running: DiscordChannel, fake: FakeDiscord, sink: RecordingSink, sleeps: Sleeps
) -> None:
    """The connection drops, a retry fails too: backoff grows (jittered), then connected
    again, messages flow, and the failure count starts over."""
    fake.run_failures = [OSError("Network is unreachable")]
    fake.drop(OSError("Connection reset by peer"))
    await sink.wait_for(lambda: fake.runs == 3 and running.status("default")[0].connected)
    assert [s.error for s in sink.statuses if s.error] == [
        "discord unreachable: Connection reset by peer",
        "discord unreachable: Network is unreachable",
    ]
    assert len(sleeps.waits) == 2
    for wait, ceiling in zip(sleeps.waits, (1.0, 2.0), strict=True):
        assert ceiling / 2 <= wait <= ceiling
    assert (await receive(fake, sink, dm("after"))).text == "after"
    fake.drop(OSError("again"))
    await sink.wait_for(lambda: fake.runs == 4 and running.status("default")[0].connected)
    assert sleeps.waits[-1] <= 1.0  # counted from one again after a good connection


async def test_backoff_is_capped_at_thirty_seconds(fake: FakeDiscord) -> None:
    """However many failures, a wait never exceeds the cap."""
    adapter = DiscordChannel(fake.build, rng=random.Random(1))
    assert all(adapter._backoff(n) <= 30.0 for n in range(1, 200))
    assert adapter._backoff(50) >= 15.0


async def test_discord_py_reconnects_show_in_the_status(
    running: DiscordChannel, fake: FakeDiscord, sink: RecordingSink, sleeps: Sleeps
) -> None:
    """discord.py's own reconnects (disconnect, then resumed) are surfaced, no backoff."""
    assert fake.events is not None
    fake.events.connection(False, "connection to Discord lost; reconnecting")
    [down] = running.status("default")
    assert (down.connected, down.authenticated) == (False, True)
    assert down.error == "connection to Discord lost; reconnecting"
    fake.events.connection(True, None)
    [up] = running.status("default")
    assert (up.connected, up.error) == (True, None)
    assert [s.connected for s in sink.statuses[-2:]] == [False, True]
    assert sleeps.waits == [] and fake.runs == 1


async def test_a_missing_message_content_intent_stops_the_account(
    channel: DiscordChannel, fake: FakeDiscord, sink: RecordingSink
) -> None:
    """A fatal refusal from the gateway ends the account with its reason in the status."""
    fake.run_failures = [Forbidden(INTENT_MISSING)]
    await channel.start("default", {"botToken": TOKEN}, sink)
    await sink.wait_for(lambda: channel.status("default")[0].error == INTENT_MISSING)
    [status] = channel.status("default")
    assert (status.connected, status.authenticated) == (False, True)
    assert "Message Content Intent" in INTENT_MISSING and fake.runs == 1


async def test_a_token_revoked_while_connected_stops_the_account(
    running: DiscordChannel, fake: FakeDiscord, sink: RecordingSink, sleeps: Sleeps
) -> None:
    """Discord closing with "authentication failed" marks the account unauthenticated."""
    fake.drop(Unauthorized(TOKEN_REJECTED))
    await sink.wait_for(lambda: running.status("default")[0].error == TOKEN_REJECTED)
    [status] = running.status("default")
    assert not status.connected and not status.authenticated
    assert sleeps.waits == [] and fake.runs == 1


async def test_stop_closes_the_connection(
    running: DiscordChannel, fake: FakeDiscord, sink: RecordingSink
) -> None:
    """stop closes the gateway; the status stays, disconnected; sends are refused."""
    await running.stop("default")
    assert fake.closes == 1
    assert not running.status("default")[0].connected
    with pytest.raises(Unavailable):
        await running.send("default", OutboundMessage(Peer("dm", DM_CHANNEL), "hi"))


async def test_the_token_never_reaches_logs_errors_or_status(
    channel: DiscordChannel,
    fake: FakeDiscord,
    sink: RecordingSink,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Bad token, network errors that echo the token, discord.py's own records, sends:
    the token is masked everywhere."""
    caplog.set_level(logging.DEBUG)
    errors: list[str] = []
    try:
        await channel.start("default", {"botToken": "other.secret.token-xyz"}, sink)
    except Unauthorized as exc:
        errors.append(str(exc))
    fake.login_failures = [OSError(f"proxy refused Authorization: Bot {TOKEN}")]
    await channel.start("default", {"botToken": TOKEN}, sink)
    await sink.wait_for(lambda: channel.status("default")[0].connected)
    logging.getLogger("discord.http").debug("POST /gateway with Bot %s", TOKEN)
    logging.getLogger("discord.gateway").info("IDENTIFY {'token': '%s'}", TOKEN)
    fake.drop(OSError(f"reset while sending {TOKEN}"))
    await sink.wait_for(lambda: fake.runs == 2 and channel.status("default")[0].connected)
    fake.send_failures = [Forbidden(f"refused {TOKEN}")]
    try:
        await channel.send("default", OutboundMessage(Peer("dm", DM_CHANNEL), "hi"))
    except Forbidden as exc:
        errors.append(str(exc))
    await channel.stop("default")
    logged = caplog.text + "".join(r.getMessage() for r in caplog.records)
    assert "Bot <bot-token>" in logged and "'token': '<bot-token>'" in logged
    everything = logged + " ".join(errors) + repr([s.to_wire() for s in sink.statuses])
    assert TOKEN not in everything and "other.secret.token-xyz" not in everything
    assert len(errors) == 2


async def test_login_explains_the_developer_portal_and_the_commands(
    running: DiscordChannel, channel: DiscordChannel
) -> None:
    """No QR: login names the portal, the Message Content intent, the config key and the
    start command; a connected bot just says so."""
    work = await channel.login("work", force=False)
    assert work.qr_data_url is None
    assert "https://discord.com/developers/applications" in work.message
    assert "Message Content Intent" in work.message
    assert "gsv config set channels.discord.accounts.work.botToken" in work.message
    assert "gsv channels start discord work" in work.message
    forced = await channel.login("default", force=True)
    assert "gsv config set channels.discord.botToken <the token>" in forced.message
    assert "5. gsv channels start discord" in forced.message
    assert (await channel.login("default", force=False)).message == (
        "Discord bot gsv-bot is connected."
    )


def test_capabilities_match_discord() -> None:
    """Discord: dm/group/channel/thread, media, typing, threads, buttons, 2,000 characters."""
    caps = DiscordChannel.capabilities
    assert caps.chat_types == ("dm", "group", "channel", "thread")
    assert caps.media and caps.typing and caps.threads and caps.buttons and not caps.qr_login
    assert caps.max_text == 2000


# -- on a real gateway -------------------------------------------------------------------


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
        await wait_until(lambda: discord_fake.sent, "the pairing prompt")
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
        await wait_until(lambda: len(discord_fake.sent) == 5, "three pieces of the answer")
        pieces = discord_fake.sent[2:]
        assert all(len(p.text) <= MAX_TEXT and p.channel_id == DM_CHANNEL for p in pieces)
        assert " ".join(p.text for p in pieces) == answer
        assert [p.reply_to for p in pieces] == ["100000000000000002", None, None]
        assert provider.requests[0].messages[-1]["content"].endswith("tell me everything")
        masked = await client.call("config.get", {"path": "channels.discord"})
        assert masked["value"]["botToken"] == "***"


async def wait_until(predicate: Callable[[], Any], what: str) -> None:
    for _ in range(1500):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


# -- the real discord.py wrapper, offline ------------------------------------------------


def test_importing_the_gateway_does_not_import_discord_py() -> None:
    """discord.py is loaded when a Discord account starts, not with the gateway."""
    code = (
        "import sys, gsv_core.gateway.app as app; adapters = app.channel_adapters(); "
        "assert 'discord' in adapters; assert 'discord' not in sys.modules, 'imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


async def test_the_real_client_asks_for_the_message_content_intent() -> None:
    """The discord.py client reads messages in DMs and servers and never pings @everyone."""
    client = DiscordPyGateway(TOKEN).build_client()
    try:
        intents = client.intents
        assert intents.message_content and intents.guild_messages and intents.dm_messages
        assert intents.guilds and not intents.members and not intents.presences
        mentions = client.allowed_mentions
        assert mentions is not None and not mentions.everyone and not mentions.roles
    finally:
        await client.close()


async def test_the_real_gateway_refuses_to_send_before_login() -> None:
    """Without a login there is no client: a clear Unavailable, no network involved."""
    gateway = DiscordPyGateway(TOKEN)
    with pytest.raises(Unavailable, match="discord is not connected"):
        await gateway.send(DM_CHANNEL, "hi", None, None)
    await gateway.close()


@dataclass
class Listener:
    messages: list[DiscordMessage] = field(default_factory=list)
    connections: list[tuple[bool, str | None]] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def message(self, message: DiscordMessage) -> None:
        self.messages.append(message)
        self.changed.set()

    def connection(self, connected: bool, reason: str | None) -> None:
        self.connections.append((connected, reason))
        self.changed.set()

    async def wait_for(self, predicate: Callable[[], Any]) -> None:
        async with asyncio.timeout(15):
            while not predicate():
                self.changed.clear()
                await self.changed.wait()


def _user(user_id: str, name: str, bot: bool = False) -> dict[str, Any]:
    return {"id": user_id, "username": name, "discriminator": "0", "avatar": None,
            "global_name": name.title(), "bot": bot}  # fmt: skip


def _message_payload(msg_id: str, channel_id: str, content: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": msg_id, "channel_id": channel_id, "author": _user(ADA.id, "ada"),
        "content": content, "timestamp": "2024-05-01T12:00:00+00:00", "edited_timestamp": None,
        "tts": False, "mention_everyone": False, "mentions": [], "mention_roles": [],
        "attachments": [], "embeds": [], "pinned": False, "type": 0, **extra,
    }  # fmt: skip


@dataclass
class RealParts:
    discord: Any  # the discord module
    gateway: DiscordPyGateway
    client: Any  # discord.Client
    state: Any  # its ConnectionState


@pytest.fixture
async def real() -> AsyncIterator[RealParts]:
    """The real wrapper's discord.py client with the bot user set, as after a login
    (offline); messages are built from gateway payloads, as discord.py itself does."""
    import discord
    from discord.user import ClientUser

    gateway = DiscordPyGateway(TOKEN)
    async with gateway.build_client() as client:  # binds the loop, as login does; offline
        state = client._connection
        state.user = ClientUser(state=state, data=_user(BOT_ID, "gsv-bot", bot=True))
        yield RealParts(discord, gateway, client, state)


async def test_real_dm_messages_convert_to_the_seam_shape(real: RealParts) -> None:
    """A discord.py DM with a mention and an image becomes a DiscordMessage: kind dm,
    mention rendered as @name, the bot in mention_ids, the attachment described."""
    discord, state = real.discord, real.state
    channel = discord.DMChannel(
        me=state.user, state=state, data={"id": DM_CHANNEL, "type": 1,
                                          "recipients": [_user(ADA.id, "ada")]}
    )  # fmt: skip
    image = {"id": "123456789012345678", "filename": "a.png", "size": 28,
             "url": "https://cdn.discordapp.com/a.png", "proxy_url": "https://media/a.png",
             "content_type": "image/png"}  # fmt: skip
    payload = _message_payload(
        "1234567890123456789", DM_CHANNEL, f"hi <@{BOT_ID}>",
        mentions=[_user(BOT_ID, "gsv-bot", bot=True)], attachments=[image],
    )  # fmt: skip
    converted = message_from_discord(
        discord.Message(state=state, channel=channel, data=payload), BOT_ID
    )
    assert converted is not None
    assert (converted.kind, converted.channel_id, converted.guild_id) == ("dm", DM_CHANNEL, None)
    assert converted.content == "hi @Gsv-Bot" and converted.mention_ids == (BOT_ID,)
    assert converted.author == DiscordAuthor(ADA.id, "Ada", "ada", False)
    assert converted.attachments == (
        DiscordAttachment("https://cdn.discordapp.com/a.png", "a.png", 28, "image/png", None),
    )
    assert converted.timestamp_ms == (int(payload["id"]) >> 22) + 1_420_070_400_000


async def test_real_thread_replies_and_role_mentions_convert(real: RealParts) -> None:
    """In a server thread: kind thread with its parent, a reply to the bot resolved from
    the payload, and a mention of the bot's own role counted as mentioning the bot."""
    discord, state = real.discord, real.state
    role_id = "600000000000000001"
    guild = discord.Guild(
        data={"id": GUILD, "name": "Team", "channels": [], "members": [], "roles": [
            {"id": role_id, "name": "gsv-bot", "permissions": "0", "position": 1, "color": 0,
             "hoist": False, "managed": True, "mentionable": True,
             "tags": {"bot_id": BOT_ID}}]},
        state=state,
    )  # fmt: skip
    thread = discord.Thread(
        guild=guild, state=state,
        data={"id": THREAD, "type": 11, "name": "plans", "parent_id": GENERAL,
              "guild_id": GUILD, "owner_id": ADA.id, "message_count": 0, "member_count": 0,
              "rate_limit_per_user": 0, "thread_metadata": {
                  "archived": False, "auto_archive_duration": 60, "locked": False,
                  "archive_timestamp": "2024-05-01T12:00:00+00:00"}},
    )  # fmt: skip
    earlier = _message_payload("1234567890123450000", THREAD, "earlier answer",
                               author=_user(BOT_ID, "gsv-bot", bot=True))  # fmt: skip
    member = {"roles": [], "joined_at": "2024-01-01T00:00:00+00:00", "deaf": False, "mute": False}
    payload = _message_payload(
        "1234567890123456789", THREAD, f"<@&{role_id}> and?", type=19, guild_id=GUILD,
        member=member, mention_roles=[role_id], referenced_message=earlier,
        message_reference={"message_id": earlier["id"], "channel_id": THREAD, "guild_id": GUILD},
    )  # fmt: skip
    converted = message_from_discord(
        discord.Message(state=state, channel=thread, data=payload), BOT_ID
    )
    assert converted is not None
    assert (converted.kind, converted.channel_id, converted.channel_name) == (
        "thread",
        THREAD,
        "plans",
    )
    assert (converted.parent_id, converted.guild_id) == (GENERAL, GUILD)
    assert converted.mention_ids == (BOT_ID,) and converted.content == "@gsv-bot and?"
    assert (converted.reply_to_id, converted.reply_to_author_id, converted.reply_to_text) == (
        earlier["id"],
        BOT_ID,
        "earlier answer",
    )
    channel = discord.TextChannel(
        state=state, guild=guild,
        data={"id": GENERAL, "type": 0, "name": "general", "position": 0, "guild_id": GUILD,
              "parent_id": None, "permission_overwrites": [], "nsfw": False},
    )  # fmt: skip
    plain = message_from_discord(
        discord.Message(
            state=state, channel=channel,
            data=_message_payload("1234567890123456790", GENERAL, "hi", guild_id=GUILD,
                                  member=member),
        ),
        BOT_ID,
    )  # fmt: skip
    assert plain is not None and (plain.kind, plain.channel_name, plain.mention_ids) == (
        "channel",
        "general",
        (),
    )
    pinned = discord.Message(
        state=state, channel=channel,
        data=_message_payload("1234567890123456791", GENERAL, "", type=6, guild_id=GUILD),
    )  # fmt: skip
    assert message_from_discord(pinned, BOT_ID) is None  # a system message


async def test_the_real_client_reports_its_events_to_the_listener(real: RealParts) -> None:
    """discord.py's ready, disconnect, resumed and message events reach `DiscordEvents`."""
    listener = Listener()
    real.gateway._events = listener
    for event in ("ready", "disconnect", "resumed"):
        real.client.dispatch(event)
    await listener.wait_for(lambda: len(listener.connections) == 3)
    assert listener.connections == [
        (True, None),
        (False, "connection to Discord lost; reconnecting"),
        (True, None),
    ]
    assert (real.gateway.bot_user_id, real.gateway.bot_name) == (BOT_ID, "gsv-bot")
    channel = real.discord.DMChannel(
        me=real.state.user, state=real.state,
        data={"id": DM_CHANNEL, "type": 1, "recipients": [_user(ADA.id, "ada")]},
    )  # fmt: skip
    payload = _message_payload("1234567890123456789", DM_CHANNEL, "hello")
    message = real.discord.Message(state=real.state, channel=channel, data=payload)
    real.client.dispatch("message", message)
    await listener.wait_for(lambda: listener.messages)
    assert [(m.kind, m.content) for m in listener.messages] == [("dm", "hello")]


async def test_real_attachment_downloads_stop_past_the_cap() -> None:
    """fetch_attachment reads a file from an HTTP server, stops one byte past the cap,
    and turns an HTTP error into Unavailable."""
    from aiohttp import web

    async def serve_file(request: web.Request) -> web.Response:
        return web.Response(body=b"x" * 100_000)

    app = web.Application()
    app.router.add_get("/file", serve_file)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    gateway = DiscordPyGateway(TOKEN)
    try:
        url = f"http://127.0.0.1:{port}/file"
        assert await gateway.fetch_attachment(url, 200_000) == b"x" * 100_000
        assert await gateway.fetch_attachment(url, 1000) == b"x" * 1001
        with pytest.raises(Unavailable, match="HTTP 404"):
            await gateway.fetch_attachment(f"http://127.0.0.1:{port}/missing", 1000)
    finally:
        await runner.cleanup()


async def test_the_real_gateway_refuses_a_malformed_channel_id() -> None:
    """A peer id that is not a Discord snowflake is refused before any request."""
    gateway = DiscordPyGateway(TOKEN)
    with pytest.raises(InvalidParams, match="not a Discord channel id: 'general'"):
        await gateway.send("general", "hi", None, None)
    with pytest.raises(InvalidParams, match="not a Discord channel id"):
        await gateway.typing("#general")
