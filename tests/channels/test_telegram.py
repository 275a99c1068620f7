"""The Telegram adapter over real HTTP against a fake Bot API: receiving (DMs, groups,
mentions, replies, topics, channels, media), sending (HTML, replies, threads, splitting,
flood limits), typing, the token, reconnecting, at-least-once offsets, a DM answered
through a real gateway; and the Markdown to Telegram HTML conversion."""

from __future__ import annotations

import asyncio
import base64
import logging
import random
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gsv_core.channels.base import (
    AccountStatus,
    Action,
    InboundMessage,
    OutboundMessage,
    Peer,
    Sender,
)
from gsv_core.channels.telegram import TOKEN_REJECTED, TelegramChannel
from gsv_core.channels.telegram.formatting import format_html, split_text, utf16_len
from gsv_core.client import GatewayClient
from gsv_core.errors import (
    Forbidden,
    InvalidParams,
    RateLimited,
    Unauthorized,
    Unavailable,
)
from gsv_core.gateway.server import ServerConfig, serve
from tests.fakes.provider import FakeProvider
from tests.fakes.telegram_api import (
    ADA,
    BOB,
    BOT_USER,
    ApiCall,
    FakeTelegramAPI,
    channel_chat,
    fake_telegram_api,
    group_chat,
    mention,
    private_chat,
    visible_text,
)

BOT_ID = str(BOT_USER["id"])
SECRET = "AAH-fake-bot-token_for-tests-9z"  # the secret half of the fake's token


@dataclass
class RecordingSink:
    """A ChannelSink that records; it can fail a number of hand-overs or hold them."""

    messages: list[InboundMessage] = field(default_factory=list)
    statuses: list[AccountStatus] = field(default_factory=list)
    failed: list[InboundMessage] = field(default_factory=list)
    failures: int = 0
    gate: asyncio.Event | None = None
    entered: asyncio.Event = field(default_factory=asyncio.Event)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def inbound(self, message: InboundMessage) -> None:
        self.entered.set()
        if self.gate is not None:
            await self.gate.wait()
        if self.failures:
            self.failures -= 1
            self.failed.append(message)
            self.changed.set()
            raise RuntimeError("journal write failed")
        self.messages.append(message)
        self.changed.set()

    def status_changed(self, channel: str, status: AccountStatus) -> None:
        assert channel == "telegram"
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


@pytest.fixture
def api() -> Iterator[FakeTelegramAPI]:
    with fake_telegram_api() as server:
        yield server


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
async def channel(sleeps: Sleeps) -> AsyncIterator[TelegramChannel]:
    adapter = TelegramChannel(sleep=sleeps, rng=random.Random(7))
    yield adapter
    for status in adapter.status():
        await adapter.stop(status.account_id)


@pytest.fixture
def sink() -> RecordingSink:
    return RecordingSink()


def bot_config(api: FakeTelegramAPI, **extra: Any) -> dict[str, Any]:
    return {"botToken": api.token, "apiBaseUrl": api.url, "pollTimeout": 1, **extra}


@pytest.fixture
async def running(
    api: FakeTelegramAPI, channel: TelegramChannel, sink: RecordingSink
) -> TelegramChannel:
    await channel.start("default", bot_config(api), sink)
    return channel


async def receive(api: FakeTelegramAPI, sink: RecordingSink, **update: Any) -> InboundMessage:
    """Queue one update and wait until the sink got a message for it."""
    before = len(sink.messages)
    api.enqueue_update(**update)
    await sink.wait_for(lambda: len(sink.messages) > before)
    return sink.messages[-1]


async def called(api: FakeTelegramAPI, predicate: Callable[[ApiCall], bool]) -> ApiCall:
    return await asyncio.to_thread(api.wait_for, predicate)


# -- receiving --------------------------------------------------------------------------


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
    async with asyncio.timeout(15):
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


# -- sending ----------------------------------------------------------------------------


async def test_send_formats_html_replies_and_targets_the_thread(
    api: FakeTelegramAPI, running: TelegramChannel
) -> None:
    """Text goes out as Telegram HTML with reply parameters and the topic's thread id."""
    out = OutboundMessage(
        Peer("group", "-1001234", thread_id="55"), "**Done** <ok> & `x<y`", reply_to_id="101"
    )
    sent_id = await running.send("default", out)
    [call] = api.calls_to("sendMessage")
    assert call.params["parse_mode"] == "HTML"
    assert call.params["text"] == "<b>Done</b> &lt;ok&gt; &amp; <code>x&lt;y</code>"
    assert call.params["chat_id"] == -1001234 and call.params["message_thread_id"] == 55
    assert call.params["reply_parameters"] == {
        "message_id": 101,
        "allow_sending_without_reply": True,
    }
    assert sent_id == str(api.sent[-1]["message_id"]) and api.sent[-1]["text"] == "Done <ok> & x<y"
    assert running.status("default")[0].last_activity is not None


async def test_send_falls_back_to_plain_text_when_formatting_is_refused(
    api: FakeTelegramAPI, running: TelegramChannel
) -> None:
    """A "can't parse entities" answer is retried once without parse_mode."""
    api.fail_next(
        "sendMessage", 400, 'Bad Request: can\'t parse entities: Unsupported start tag "x"'
    )
    sent_id = await running.send("default", OutboundMessage(Peer("dm", "1001"), "*hi*"))
    first, second = api.calls_to("sendMessage")
    assert first.params["parse_mode"] == "HTML" and first.params["text"] == "<i>hi</i>"
    assert "parse_mode" not in second.params and second.params["text"] == "*hi*"
    assert sent_id == str(api.sent[-1]["message_id"])


async def test_text_over_the_limit_is_split(api: FakeTelegramAPI, running: TelegramChannel) -> None:
    """More than 4,096 characters go out as several messages; only the first replies."""
    paragraphs = ["a" * 3000, "b" * 3000, "c" * 3000]
    out = OutboundMessage(Peer("dm", "1001"), "\n\n".join(paragraphs), reply_to_id="7")
    sent_id = await running.send("default", out)
    calls = api.calls_to("sendMessage")
    assert [c.params["text"] for c in calls] == paragraphs
    assert "reply_parameters" in calls[0].params
    assert all("reply_parameters" not in c.params for c in calls[1:])
    assert sent_id == str(api.sent[-1]["message_id"])


async def test_buttons_go_under_the_last_piece_and_an_edit_removes_them(
    api: FakeTelegramAPI, running: TelegramChannel
) -> None:
    """Actions become one row of inline buttons on the last piece only (styled); edit
    replaces that message's text and drops the keyboard."""
    actions = (Action("approve:ab12cd:allow", "Allow", "primary"),
               Action("approve:ab12cd:deny", "Deny", "danger"))  # fmt: skip
    out = OutboundMessage(Peer("dm", "1001"), "a" * 3000 + "\n\n" + "b" * 3000, actions=actions)
    sent_id = await running.send("default", out)
    first, last = api.sent
    assert "reply_markup" not in first
    assert last["reply_markup"]["inline_keyboard"] == [[
        {"text": "Allow", "callback_data": "approve:ab12cd:allow", "style": "success"},
        {"text": "Deny", "callback_data": "approve:ab12cd:deny", "style": "danger"},
    ]]  # fmt: skip
    await running.edit("default", Peer("dm", "1001"), str(sent_id), "**Done**")
    assert last["text"] == "Done" and "reply_markup" not in last
    assert api.calls_to("editMessageText")[0].params["parse_mode"] == "HTML"


async def test_blank_text_sends_nothing(api: FakeTelegramAPI, running: TelegramChannel) -> None:
    """Telegram refuses empty messages, so none is sent."""
    assert await running.send("default", OutboundMessage(Peer("dm", "1001"), " \n")) is None
    assert api.calls_to("sendMessage") == []


async def test_send_waits_out_a_flood_limit(
    api: FakeTelegramAPI, running: TelegramChannel, sleeps: Sleeps
) -> None:
    """A 429 with retry_after is waited out and the message is sent."""
    api.fail_next("sendMessage", 429, "Too Many Requests: retry after 7", retry_after=7)
    sent_id = await running.send("default", OutboundMessage(Peer("dm", "1001"), "patience"))
    assert sleeps.waits == [7.0]
    assert len(api.calls_to("sendMessage")) == 2 and sent_id == str(api.sent[-1]["message_id"])


async def test_send_gives_up_on_a_long_flood_wait(
    api: FakeTelegramAPI, running: TelegramChannel, sleeps: Sleeps
) -> None:
    """A retry_after beyond the bound fails fast with RateLimited."""
    api.fail_next("sendMessage", 429, "Too Many Requests: retry after 120", retry_after=120)
    with pytest.raises(RateLimited, match="retry after 120 s") as caught:
        await running.send("default", OutboundMessage(Peer("dm", "1001"), "later"))
    assert caught.value.retryable and sleeps.waits == []
    assert len(api.calls_to("sendMessage")) == 1


async def test_send_errors_are_clear_gsv_errors(
    api: FakeTelegramAPI, running: TelegramChannel
) -> None:
    """A blocked bot is Forbidden; a bad chat is InvalidParams; both carry Telegram's words."""
    api.fail_next("sendMessage", 403, "Forbidden: bot was blocked by the user")
    with pytest.raises(Forbidden, match="bot was blocked by the user"):
        await running.send("default", OutboundMessage(Peer("dm", "1001"), "hello?"))
    api.fail_next("sendMessage", 400, "Bad Request: chat not found")
    with pytest.raises(InvalidParams, match="Chat not found"):
        await running.send("default", OutboundMessage(Peer("dm", "999"), "hello?"))


async def test_sending_on_an_account_that_is_not_running_fails(channel: TelegramChannel) -> None:
    """send() before start() is Unavailable, naming the account."""
    with pytest.raises(Unavailable, match="telegram account 'default' is not running"):
        await channel.send("default", OutboundMessage(Peer("dm", "1"), "hi"))


async def test_typing_sends_a_chat_action_only_when_on(
    api: FakeTelegramAPI, running: TelegramChannel
) -> None:
    """typing=True is a sendChatAction "typing" (in the thread); False sends nothing."""
    await running.set_typing("default", Peer("group", "-1001234", thread_id="55"), True)
    await running.set_typing("default", Peer("group", "-1001234", thread_id="55"), False)
    [call] = api.calls_to("sendChatAction")
    assert call.params == {"chat_id": -1001234, "action": "typing", "message_thread_id": 55}
    api.fail_next("sendChatAction", 400, "Bad Request: chat not found")
    await running.set_typing("default", Peer("dm", "404"), True)  # a courtesy: never raises


# -- the token, starting, reconnecting --------------------------------------------------


async def test_a_bad_token_is_a_clear_error_and_status(
    api: FakeTelegramAPI, channel: TelegramChannel, sink: RecordingSink
) -> None:
    """Telegram's 401 on getMe is Unauthorized, named plainly; the status says so too."""
    config = bot_config(api, botToken="7000001:wrong-secret-value")
    with pytest.raises(Unauthorized, match=TOKEN_REJECTED) as caught:
        await channel.start("default", config, sink)
    assert "wrong-secret-value" not in str(caught.value)
    [status] = channel.status("default")
    assert (status.connected, status.authenticated, status.error) == (False, False, TOKEN_REJECTED)
    assert sink.statuses[-1].error == TOKEN_REJECTED
    with pytest.raises(Unavailable):
        await channel.send("default", OutboundMessage(Peer("dm", "1"), "hi"))


@pytest.mark.parametrize(
    ("config", "words"),
    [
        ({}, "needs a bot token"),
        ({"botToken": "  "}, "needs a bot token"),
        ({"botToken": "1:x", "apiBaseUrl": "ftp://example"}, "apiBaseUrl"),
        ({"botToken": "1:x", "pollTimeout": "soon"}, "pollTimeout"),
        ({"botToken": "1:x", "pollTimeout": 99}, "between 1 and 50"),
    ],
)
async def test_bad_settings_are_invalid_params(
    channel: TelegramChannel, sink: RecordingSink, config: dict[str, Any], words: str
) -> None:
    """A missing token or a malformed setting is refused before any request."""
    with pytest.raises(InvalidParams, match=words):
        await channel.start("default", config, sink)


async def test_an_unreachable_api_at_start_keeps_trying(
    api: FakeTelegramAPI, channel: TelegramChannel, sink: RecordingSink, sleeps: Sleeps
) -> None:
    """A network failure at start is not fatal: the account connects once Telegram answers."""
    api.drop_next("getMe")
    await channel.start("default", bot_config(api), sink)
    assert sink.statuses[0].error is not None and sink.statuses[0].error.startswith(
        "telegram unreachable"
    )
    await sink.wait_for(lambda: channel.status("default")[0].connected)
    assert len(sleeps.waits) == 1
    got = await receive(api, sink, message=api.message(private_chat(ADA), "made it"))
    assert got.text == "made it"


async def test_polling_rides_out_dropped_connections_and_server_errors(
    api: FakeTelegramAPI, running: TelegramChannel, sink: RecordingSink, sleeps: Sleeps
) -> None:
    """Dropped connections and a 502 mark the account down, back off with capped jitter,
    then reconnect and keep delivering."""
    await receive(api, sink, message=api.message(private_chat(ADA), "before"))
    api.drop_next("getUpdates", times=2)
    api.fail_next("getUpdates", 502, "Bad Gateway")
    await sink.wait_for(lambda: any(not s.connected for s in sink.statuses))
    down = next(s for s in sink.statuses if not s.connected)
    assert down.error is not None and down.error.startswith("telegram unreachable")
    await sink.wait_for(lambda: sink.statuses[-1].connected)
    assert sink.statuses[-1].error is None
    assert len(sleeps.waits) == 3
    for wait, ceiling in zip(sleeps.waits, (1.0, 2.0, 4.0), strict=True):
        assert ceiling / 2 <= wait <= ceiling
    got = await receive(api, sink, message=api.message(private_chat(ADA), "after"))
    assert got.text == "after" and [m.text for m in sink.messages] == ["before", "after"]


async def test_backoff_is_capped_at_thirty_seconds() -> None:
    """However many failures, a wait never exceeds the cap."""
    waits = Sleeps()
    adapter = TelegramChannel(sleep=waits, rng=random.Random(1))
    assert all(adapter._backoff(n) <= 30.0 for n in range(1, 200))
    assert adapter._backoff(50) >= 15.0


async def test_a_token_revoked_while_polling_stops_the_account(
    api: FakeTelegramAPI, running: TelegramChannel, sink: RecordingSink
) -> None:
    """A 401 from getUpdates ends polling with the token error in the status."""
    api.fail_next("getUpdates", 401, "Unauthorized")
    await sink.wait_for(lambda: sink.statuses[-1].error == TOKEN_REJECTED)
    [status] = running.status("default")
    assert not status.connected and not status.authenticated


async def test_the_token_never_reaches_logs_or_errors(
    api: FakeTelegramAPI,
    channel: TelegramChannel,
    sink: RecordingSink,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Bad token, good token, traffic, failures: the secret is masked everywhere."""
    caplog.set_level(logging.DEBUG)
    errors: list[str] = []
    try:
        await channel.start("default", bot_config(api, botToken="7000001:other-secret-xyz"), sink)
    except Unauthorized as exc:
        errors.append(str(exc))
    await channel.start("default", bot_config(api), sink)
    await receive(api, sink, message=api.message(private_chat(ADA), "hi"))
    api.drop_next("getUpdates")
    api.fail_next("sendMessage", 400, "Bad Request: chat not found")
    try:
        await channel.send("default", OutboundMessage(Peer("dm", "5"), "hi"))
    except InvalidParams as exc:
        errors.append(str(exc))
    await sink.wait_for(lambda: any(not s.connected for s in sink.statuses[1:]))
    await sink.wait_for(lambda: sink.statuses[-1].connected)
    await channel.stop("default")
    logged = caplog.text + "".join(r.getMessage() for r in caplog.records)
    assert "/bot7000001:<bot-token>/getMe" in logged  # httpx's request lines, masked
    everything = logged + " ".join(errors) + repr([s.to_wire() for s in sink.statuses])
    assert SECRET not in everything and "other-secret-xyz" not in everything
    assert len(errors) == 2


async def test_login_explains_botfather_and_the_config_key(
    api: FakeTelegramAPI, channel: TelegramChannel, sink: RecordingSink
) -> None:
    """No QR: login tells how to get a token and where to put it; logout stops the bot."""
    result = await channel.login("default", force=False)
    assert result.qr_data_url is None
    assert "@BotFather" in result.message
    assert "gsv config set channels.telegram.botToken" in result.message
    assert "gsv channels start telegram" in result.message
    work = await channel.login("work", force=False)
    assert "channels.telegram.accounts.work.botToken" in work.message
    assert "gsv channels start telegram work" in work.message
    await channel.start("default", bot_config(api), sink)
    assert "@gsv_test_bot is connected" in (await channel.login("default", force=False)).message
    await channel.logout("default")
    assert not channel.status("default")[0].connected
    with pytest.raises(Unavailable):
        await channel.send("default", OutboundMessage(Peer("dm", "1"), "hi"))


def test_capabilities_match_telegram() -> None:
    """Telegram: dm/group/channel/thread, media, typing, threads, 4,096 characters."""
    caps = TelegramChannel.capabilities
    assert caps.chat_types == ("dm", "group", "channel", "thread")
    assert caps.media and caps.typing and caps.threads and not caps.qr_login
    assert caps.max_text == 4096


# -- Markdown to Telegram HTML ----------------------------------------------------------


@pytest.mark.parametrize(
    ("markdown", "html"),
    [
        ("x < y && z > w", "x &lt; y &amp;&amp; z &gt; w"),
        ("**bold** *it* _it_ ~~gone~~", "<b>bold</b> <i>it</i> <i>it</i> <s>gone</s>"),
        ("a snake_case_name, __init__ and 2*3*4", "a snake_case_name, __init__ and 2*3*4"),
        ("use `a<b>` now", "use <code>a&lt;b&gt;</code> now"),
        ("[docs](https://ex.com/?a=1&b=2)", '<a href="https://ex.com/?a=1&amp;b=2">docs</a>'),
        ("[x](javascript:alert(1))", "[x](javascript:alert(1))"),
        ("# Title\n- one\n* two", "<b>Title</b>\n• one\n• two"),
        ("> quoted\n> more\nafter", "<blockquote>quoted\nmore</blockquote>\nafter"),
        (
            "```python\nif a < b:\n    pass\n```\ndone",
            '<pre><code class="language-python">if a &lt; b:\n    pass</code></pre>\ndone',
        ),
        ("```\nnever closed <x>", "<pre>never closed &lt;x&gt;</pre>"),
        ("**a _b** c_", "<b>a _b</b> c_"),
    ],
)
def test_markdown_becomes_telegram_html(markdown: str, html: str) -> None:
    """Escaping, emphasis, code, links, headings, lists, quotes and fences convert safely."""
    assert format_html(markdown) == html


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(st.text())
def test_formatted_text_is_always_accepted_and_never_longer(markdown: str) -> None:
    """Any input yields HTML Telegram accepts, whose visible text fits where the input did."""
    visible = visible_text(format_html(markdown))
    assert utf16_len(visible) <= utf16_len(markdown)


def test_split_prefers_boundaries_and_counts_utf16() -> None:
    """Chunks fit the limit in UTF-16 units and break at paragraphs, lines, then words."""
    assert split_text("short") == ["short"]
    assert split_text("  \n ") == []
    assert split_text("aaaa\n\nbbbb", limit=6) == ["aaaa", "bbbb"]
    assert split_text("one two three", limit=8) == ["one two", "three"]
    emoji = split_text("😀" * 5000)
    assert [utf16_len(c) for c in emoji] == [4096, 4096, 1808]
    assert "".join(emoji) == "😀" * 5000


# -- end to end through the gateway -----------------------------------------------------


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
