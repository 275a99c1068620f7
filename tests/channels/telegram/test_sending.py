"""Sending to a fake Bot API: HTML, replies, threads, splitting, buttons, flood limits,
errors, typing."""

from __future__ import annotations

import pytest

from gsv_core.channels.base import Action
from gsv_core.channels.base import MessageEdit
from gsv_core.channels.base import OutboundMessage
from gsv_core.channels.base import Peer
from gsv_core.channels.telegram import TelegramChannel
from gsv_core.errors import Forbidden
from gsv_core.errors import InvalidParams
from gsv_core.errors import RateLimited
from gsv_core.errors import Unavailable
from tests.fakes.channel_sink import Sleeps
from tests.fakes.telegram_api import FakeTelegramAPI


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
    await running.edit(MessageEdit("default", Peer("dm", "1001"), str(sent_id), "**Done**"))
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
