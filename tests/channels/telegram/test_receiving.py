"""Receiving from a fake Bot API over real HTTP: DMs, groups, mentions, replies, topics,
channels, media, and at-least-once offsets."""

from __future__ import annotations

import asyncio
import base64

from gsv_core.channels.base import OutboundMessage
from gsv_core.channels.base import Peer
from gsv_core.channels.base import Sender
from gsv_core.channels.telegram import TelegramChannel
from tests.fakes.channel_sink import RecordingSink
from tests.fakes.channel_sink import Sleeps
from tests.fakes.telegram_adapter import BOT_ID
from tests.fakes.telegram_adapter import bot_config
from tests.fakes.telegram_adapter import called
from tests.fakes.telegram_adapter import receive
from tests.fakes.telegram_api import ADA
from tests.fakes.telegram_api import BOB
from tests.fakes.telegram_api import FakeTelegramAPI
from tests.fakes.telegram_api import channel_chat
from tests.fakes.telegram_api import group_chat
from tests.fakes.telegram_api import mention
from tests.fakes.telegram_api import private_chat
from tests.waiting import WAIT


async def test_a_dm_reaches_the_sink_with_peer_sender_and_ids(
    api: FakeTelegramAPI, running: TelegramChannel, sink: RecordingSink
) -> None:
    """A private chat message becomes a dm InboundMessage with Telegram's ids."""
    message = api.message(private_chat(ADA), "hello there")
    got = await receive(api, sink, message=message)
    assert got.channel == "telegram" and got.account_id == "default"
    assert got.peer == Peer("dm", "1001", name="Ada", handle="ada")
    assert got.sender == Sender("1001", "Ada Lovelace", "ada")
    assert got.message_id == str(message["message_id"]) and got.text == "hello there"
    assert got.timestamp == message["date"] * 1000
    assert not got.was_mentioned and got.media == () and got.reply_to_id is None


async def test_status_reports_the_connected_bot(
    api: FakeTelegramAPI, running: TelegramChannel, sink: RecordingSink
) -> None:
    """After start the account is connected and authenticated as the bot from getMe."""
    [status] = running.status("default")
    assert status.connected and status.authenticated and status.error is None
    assert status.mode == "polling"
    assert status.extra == {"botId": BOT_ID, "botUsername": "gsv_test_bot"}
    assert sink.statuses[-1].connected
    assert [call.method for call in api.calls[:2]] == ["getMe", "deleteWebhook"]
    assert running.status("other") == []


async def test_group_chatter_is_delivered_without_a_mention(
    api: FakeTelegramAPI, running: TelegramChannel, sink: RecordingSink
) -> None:
    """A supergroup message is a group peer, not mentioned, with its sender."""
    got = await receive(api, sink, message=api.message(group_chat(), "just chatting", sender=BOB))
    assert got.peer == Peer("group", "-1001234", name="Team")
    assert got.sender == Sender("1002", "Bob", "bob")
    assert not got.was_mentioned and got.mentioned_ids == ()


async def test_mentions_of_the_bot_are_recognised(
    api: FakeTelegramAPI, running: TelegramChannel, sink: RecordingSink
) -> None:
    """An @mention entity of the bot (UTF-16 offsets) sets was_mentioned; @bob does not."""
    text = "👋 hey @gsv_test_bot, what's up?"
    got = await receive(
        api, sink, message=api.message(group_chat(), text, entities=mention(text, "@gsv_test_bot"))
    )
    assert got.was_mentioned and got.mentioned_ids == (BOT_ID,)
    other = "ask @bob instead"
    got = await receive(
        api, sink, message=api.message(group_chat(), other, entities=mention(other, "@bob"))
    )
    assert not got.was_mentioned
    caption = "look @GSV_test_bot"
    photo = api.photo(b"img")
    got = await receive(api, sink, message=api.message(group_chat(), photo=photo, caption=caption))
    assert got.was_mentioned and got.text == caption


async def test_a_command_addressed_to_the_bot_loses_the_suffix(
    api: FakeTelegramAPI, running: TelegramChannel, sink: RecordingSink
) -> None:
    """`/status@gsv_test_bot` in a group is the command `/status`, addressed to us."""
    got = await receive(api, sink, message=api.message(group_chat(), "/status@gsv_test_bot now"))
    assert got.text == "/status now" and got.was_mentioned


async def test_a_reply_to_the_bot_counts_as_a_mention(
    api: FakeTelegramAPI, running: TelegramChannel, sink: RecordingSink
) -> None:
    """Replying to one of the bot's messages sets reply_to_bot and was_mentioned."""
    chat = group_chat()
    sent_id = await running.send(
        "default", OutboundMessage(Peer("group", "-1001234"), "I can help")
    )
    bot_message = api.sent[-1]
    got = await receive(
        api, sink, message=api.message(chat, "yes please", reply_to_message=bot_message)
    )
    assert got.reply_to_id == sent_id and got.reply_to_text == "I can help"
    assert got.reply_to_bot and got.was_mentioned
    bob_message = api.message(chat, "lunch?", sender=BOB)
    got = await receive(api, sink, message=api.message(chat, "sure", reply_to_message=bob_message))
    assert got.reply_to_id == str(bob_message["message_id"]) and got.reply_to_text == "lunch?"
    assert not got.reply_to_bot and not got.was_mentioned


async def test_a_forum_topic_message_carries_its_thread(
    api: FakeTelegramAPI, running: TelegramChannel, sink: RecordingSink
) -> None:
    """Forum topics set peer.thread_id; the topic's opening message is not a reply."""
    chat = group_chat(forum=True)
    opening = {
        "message_id": 55,
        "date": 1,
        "chat": chat,
        "forum_topic_created": {"name": "Ideas", "icon_color": 7322096},
    }
    message = api.message(
        chat, "in the topic", message_thread_id=55, is_topic_message=True, reply_to_message=opening
    )
    got = await receive(api, sink, message=message)
    assert got.peer.kind == "group" and got.peer.thread_id == "55"
    assert got.reply_to_id is None


async def test_a_channel_post_is_a_channel_peer(
    api: FakeTelegramAPI, running: TelegramChannel, sink: RecordingSink
) -> None:
    """Channel posts arrive as peer kind channel, spoken by the channel itself."""
    chat = channel_chat()
    got = await receive(
        api, sink, channel_post=api.message(chat, "news!", sender=None, sender_chat=chat)
    )
    assert got.peer == Peer("channel", "-1005678", name="News", handle="news")
    assert got.sender == Sender("-1005678", "News", "news")


async def test_photo_voice_and_document_round_trip_as_base64(
    api: FakeTelegramAPI, running: TelegramChannel, sink: RecordingSink
) -> None:
    """Attachments are downloaded via getFile; the largest photo size is taken."""
    chat = private_chat(ADA)
    picture, speech, report = b"\x89PNG full picture", b"OggS voice", b"%PDF-1.7 report"
    got = await receive(
        api, sink, message=api.message(chat, photo=api.photo(picture), caption="my cat")
    )
    [image] = got.media
    assert got.text == "my cat"
    assert (image.type, image.mime_type, image.size) == ("image", "image/jpeg", len(picture))
    assert base64.b64decode(image.data or "") == picture
    got = await receive(api, sink, message=api.message(chat, voice=api.voice(speech, duration=3)))
    [audio] = got.media
    assert (audio.type, audio.mime_type, audio.duration, got.text) == (
        "audio",
        "audio/ogg",
        3.0,
        "",
    )
    assert base64.b64decode(audio.data or "") == speech
    doc = api.document(report, "report.pdf", "application/pdf")
    got = await receive(api, sink, message=api.message(chat, document=doc))
    [document] = got.media
    assert (document.type, document.filename, document.mime_type) == (
        "document",
        "report.pdf",
        "application/pdf",
    )
    assert base64.b64decode(document.data or "") == report


async def test_an_oversized_attachment_is_skipped_with_a_note(
    api: FakeTelegramAPI, running: TelegramChannel, sink: RecordingSink
) -> None:
    """Files over 20 MB are not downloaded; the text says so."""
    doc = api.document(b"x", "huge.zip", "application/zip", declared_size=25 * 1024 * 1024)
    got = await receive(
        api, sink, message=api.message(private_chat(ADA), document=doc, caption="backup")
    )
    assert got.media == ()
    assert got.text == "backup\n[attachment skipped: huge.zip is 25.0 MB, over the 20 MB limit]"
    assert api.calls_to("getFile") == []


async def test_an_attachment_that_cannot_be_fetched_becomes_a_note(
    api: FakeTelegramAPI, running: TelegramChannel, sink: RecordingSink
) -> None:
    """A getFile failure keeps the message, without the file, and says so."""
    doc = {
        "file_id": "gone",
        "file_unique_id": "u-gone",
        "file_name": "old.txt",
        "mime_type": "text/plain",
    }
    got = await receive(api, sink, message=api.message(private_chat(ADA), document=doc))
    assert got.media == () and got.text == "[attachment not downloaded: old.txt]"


async def test_edits_and_service_messages_are_ignored(
    api: FakeTelegramAPI, running: TelegramChannel, sink: RecordingSink
) -> None:
    """Only new messages, channel posts and button presses are asked for; joins carry no
    conversation."""
    chat = group_chat()
    api.enqueue_update(edited_message=api.message(chat, "edited", edit_date=2))
    api.enqueue_update(message=api.message(chat, None, new_chat_members=[BOB]))
    got = await receive(api, sink, message=api.message(chat, "real"))
    assert [m.text for m in sink.messages] == [got.text] == ["real"]
    allowed = api.calls_to("getUpdates")[0].params["allowed_updates"]
    assert allowed == ["message", "channel_post", "callback_query"]


# -- at least once ----------------------------------------------------------------------


async def test_an_update_the_sink_still_holds_at_stop_comes_again(
    api: FakeTelegramAPI, channel: TelegramChannel, sink: RecordingSink
) -> None:
    """Stopping (as a crash would) while the sink holds an update leaves it unconfirmed,
    so the next start receives it again; the offset moves only once the sink returned."""
    await channel.start("default", bot_config(api), sink)
    sink.gate = asyncio.Event()
    update_id = api.enqueue_update(message=api.message(private_chat(ADA), "hold me"))
    async with asyncio.timeout(WAIT):
        await sink.entered.wait()
    await channel.stop("default")
    assert all((c.params.get("offset") or 0) <= update_id for c in api.calls_to("getUpdates"))
    assert sink.messages == []
    sink.gate = None
    await channel.start("default", bot_config(api), sink)
    await sink.wait_for(lambda: sink.messages)
    assert [m.text for m in sink.messages] == ["hold me"]
    await called(
        api, lambda c: c.method == "getUpdates" and c.params.get("offset") == update_id + 1
    )


async def test_an_update_the_sink_failed_is_delivered_again(
    api: FakeTelegramAPI, running: TelegramChannel, sink: RecordingSink, sleeps: Sleeps
) -> None:
    """A sink that raises once gets the same message again, after a backoff."""
    sink.failures = 1
    message = api.message(private_chat(ADA), "try again")
    update_id = api.enqueue_update(message=message)
    await called(
        api, lambda c: c.method == "getUpdates" and c.params.get("offset") == update_id + 1
    )
    assert [m.message_id for m in sink.failed] == [m.message_id for m in sink.messages]
    assert sink.messages[0].message_id == str(message["message_id"])
    polls = [c.params.get("offset") for c in api.calls_to("getUpdates")]
    first_advance = polls.index(update_id + 1)
    assert first_advance >= 2 and set(polls[:first_advance]) == {None}  # fetched twice
    assert len(sleeps.waits) == 1


async def test_stop_confirms_handled_updates(
    api: FakeTelegramAPI, channel: TelegramChannel, sink: RecordingSink
) -> None:
    """Stopping tells Telegram what was handled, so a restart does not see it again."""
    await channel.start("default", bot_config(api), sink)
    update_id = api.enqueue_update(message=api.message(private_chat(ADA), "once"))
    await sink.wait_for(lambda: sink.messages)
    await channel.stop("default")
    assert api.calls_to("getUpdates")[-1].params.get("offset") == update_id + 1
    assert not channel.status("default")[0].connected
    await channel.start("default", bot_config(api), sink)
    await called(api, lambda c: c.method == "getUpdates" and c.params.get("offset") is None)
    api.enqueue_update(message=api.message(private_chat(ADA), "twice"))
    await sink.wait_for(lambda: len(sink.messages) == 2)
    assert [m.text for m in sink.messages] == ["once", "twice"]
