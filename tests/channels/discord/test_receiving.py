"""Receiving from Discord through the fake seam: DMs, server channels, threads, mentions,
replies, attachments, hand-over retries."""

from __future__ import annotations

import base64
import logging

import pytest

from gsv_core.channels.base import OutboundMessage
from gsv_core.channels.base import Peer
from gsv_core.channels.discord import DiscordChannel
from gsv_core.channels.discord.seam import DiscordAttachment
from gsv_core.channels.discord.seam import DiscordAuthor
from tests.fakes.channel_sink import RecordingSink
from tests.fakes.channel_sink import Sleeps
from tests.fakes.discord_seam import ADA
from tests.fakes.discord_seam import BOB
from tests.fakes.discord_seam import BOT_ID
from tests.fakes.discord_seam import DM_CHANNEL
from tests.fakes.discord_seam import GENERAL
from tests.fakes.discord_seam import PNG
from tests.fakes.discord_seam import THREAD
from tests.fakes.discord_seam import FakeDiscord
from tests.fakes.discord_seam import Sent
from tests.fakes.discord_seam import dm
from tests.fakes.discord_seam import in_guild
from tests.fakes.discord_seam import receive


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
