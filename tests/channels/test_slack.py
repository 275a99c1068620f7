"""The Slack adapter end to end: a real gateway with the fake LLM, the adapter talking real
HTTP and WebSocket to a fake Slack Web API and Socket Mode server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gsv_core.channels.slack import SlackChannel
from gsv_core.channels.slack.formatting import mentioned_ids
from gsv_core.channels.slack.formatting import to_mrkdwn
from gsv_core.channels.slack.formatting import to_plain
from gsv_core.client import GatewayClient
from gsv_core.errors import InvalidParams
from gsv_core.errors import Unauthorized
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from tests.fakes.provider import FakeProvider
from tests.fakes.slack_api import ADA
from tests.fakes.slack_api import APP_TOKEN
from tests.fakes.slack_api import BOB
from tests.fakes.slack_api import BOT_TOKEN
from tests.fakes.slack_api import BOT_USER_ID
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_api import fake_slack
from tests.waiting import until

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


@pytest.fixture
def fake() -> FakeProvider:
    return FakeProvider()


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with fake_slack() as running:
        yield running


@pytest.fixture
async def gw(tmp_path: Path, fake: FakeProvider) -> AsyncIterator[RunningGateway]:
    config = ServerConfig(database=tmp_path / "data" / "gsv.db", provider_factory=fake.factory)
    async with serve(config, port=0) as running:
        yield running


@pytest.fixture
async def client(gw: RunningGateway) -> AsyncIterator[GatewayClient]:
    async with GatewayClient(gw.url, token=gw.token) as connected:
        yield connected


async def configure(client: GatewayClient, slack: FakeSlack, **settings: Any) -> None:
    value = {"appToken": APP_TOKEN, "botToken": BOT_TOKEN, "apiBaseUrl": slack.api_url, **settings}
    await client.call("config.set", {"path": "channels.slack", "value": value})


async def start(client: GatewayClient, slack: FakeSlack, **settings: Any) -> None:
    """Configure and start the default Slack account; return once its socket is open."""
    await configure(client, slack, **settings)
    await client.call("channel.start", {"channel": "slack"})
    await slack.wait_for(lambda: slack.sessions >= 1)


async def status(client: GatewayClient) -> dict[str, Any]:
    accounts = (await client.call("channel.status", {"channel": "slack"}))["accounts"]
    assert len(accounts) == 1
    found: dict[str, Any] = accounts[0]
    return found


def last_user_text(fake: FakeProvider) -> str:
    content = fake.requests[-1].messages[-1]["content"]
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")


async def test_a_direct_message_is_answered_in_mrkdwn(
    client: GatewayClient, slack: FakeSlack, fake: FakeProvider
) -> None:
    """A DM reaches the agent (envelope acknowledged); the Markdown reply is posted to the
    DM as mrkdwn with the bot token."""
    await start(client, slack, dmPolicy="open")
    fake.enqueue("**Hello** Ada, see [the docs](https://example.com/a?b=1&c=2)")
    envelope = await slack.send_event(slack.message("hello there"))
    await slack.wait_acked(envelope)
    await slack.wait_for(lambda: slack.posted)
    (posted,) = slack.posted
    assert posted["channel"] == "D0ADA" and "thread_ts" not in posted
    assert posted["text"] == "*Hello* Ada, see <https://example.com/a?b=1&amp;c=2|the docs>"
    assert slack.calls[-1].token == BOT_TOKEN
    assert last_user_text(fake).startswith("[slack · ") and "hello there" in last_user_text(fake)
    answered = await status(client)
    assert answered["connected"] and answered["authenticated"] and answered["mode"] == "socket"
    assert "lastActivity" in answered and "error" not in answered


async def test_an_unknown_sender_must_pair_first(
    client: GatewayClient, slack: FakeSlack, fake: FakeProvider
) -> None:
    """Default policy: one pairing prompt, approval by Slack user id, a welcome, then chat."""
    await start(client, slack)
    await slack.send_event(slack.message("let me in"))
    await slack.wait_for(lambda: slack.posted)
    assert slack.posted[0]["text"] == (
        "Your message has been received. Awaiting approval from the owner."
    )
    pairs = (await client.call("pair.list"))["pairs"]
    assert pairs[f"slack:{ADA}"]["senderName"] == "ada"
    assert fake.requests == []
    await client.call("pair.approve", {"channel": "slack", "senderId": ADA})
    await slack.wait_for(lambda: len(slack.posted) == 2)
    assert slack.posted[1]["channel"] == "D0ADA"
    assert slack.posted[1]["text"].startswith("You're now connected!")
    fake.enqueue("Welcome aboard.")
    await slack.send_event(slack.message("thanks"))
    await slack.wait_for(lambda: len(slack.posted) == 3)
    assert slack.posted[2]["text"] == "Welcome aboard."


async def test_channel_messages_wake_the_agent_only_when_mentioned(
    client: GatewayClient, slack: FakeSlack, fake: FakeProvider
) -> None:
    """In a channel chatter is ignored; a `<@bot>` mention is answered in the channel and
    the agent reads `@gsv` and who spoke."""
    await start(client, slack, allowFrom=[ADA])
    chatter = await slack.send_event(
        slack.message("just chatting", channel="C0GEN", channel_type="channel")
    )
    await slack.wait_acked(chatter)
    fake.enqueue("At your service.")
    await slack.send_event(
        slack.message(f"<@{BOT_USER_ID}> what's up?", channel="C0GEN", channel_type="channel")
    )
    await slack.wait_for(lambda: slack.posted)
    assert [(p["channel"], p["text"]) for p in slack.posted] == [("C0GEN", "At your service.")]
    assert "thread_ts" not in slack.posted[0]
    assert len(fake.requests) == 1  # the chatter never woke the agent
    assert last_user_text(fake).endswith("· ada (guest)] @gsv what's up?")


async def test_a_thread_is_its_own_conversation_and_replies_stay_in_it(
    client: GatewayClient, slack: FakeSlack, fake: FakeProvider, gw: RunningGateway
) -> None:
    """A mention inside a thread of a private channel is answered in that thread, and the
    thread has its own session."""
    await start(client, slack, allowFrom=[ADA])
    parent = slack.next_ts()
    fake.enqueue("Replying in the thread.")
    await slack.send_event(slack.message(
        f"<@{BOT_USER_ID}> and you?", channel="G0PRIV", channel_type="group", thread_ts=parent,
    ))  # fmt: skip
    await slack.wait_for(lambda: slack.posted)
    (posted,) = slack.posted
    assert (posted["channel"], posted["thread_ts"]) == ("G0PRIV", parent)
    keys = {s["sessionKey"] for s in (await client.call("sessions.list"))["sessions"]}
    assert f"agent:main:slack:thread:g0priv_{parent}" in keys


async def test_an_app_mention_copy_of_a_message_is_answered_once(
    client: GatewayClient, slack: FakeSlack, fake: FakeProvider
) -> None:
    """Slack sends `message` and `app_mention` for one mention: one answer."""
    await start(client, slack, allowFrom=[ADA])
    event = slack.message(f"<@{BOT_USER_ID}> ping", channel="C0GEN", channel_type="channel")
    mention = {k: v for k, v in event.items() if k != "channel_type"} | {"type": "app_mention"}
    fake.enqueue("pong")
    await slack.send_event(mention)
    second = await slack.send_event(event)
    await slack.wait_acked(second)
    await slack.wait_for(lambda: slack.posted)
    fake.enqueue("later")
    await slack.send_event(slack.message("dm after", user=ADA))  # a later message: in order
    await slack.wait_for(lambda: len(slack.posted) == 2)
    assert [p["text"] for p in slack.posted] == ["pong", "later"]


async def test_a_group_dm_keeps_one_session_for_messages_and_mentions(
    client: GatewayClient, slack: FakeSlack, fake: FakeProvider
) -> None:
    """A multi-person DM is a group; a later app_mention there (it carries no channel
    type) lands in the same session."""
    await start(client, slack, allowFrom=[ADA])
    fake.enqueue("one")
    fake.enqueue("two")
    await slack.send_event(
        slack.message(f"<@{BOT_USER_ID}> hi all", channel="G0MPIM", channel_type="mpim")
    )
    await slack.wait_for(lambda: slack.posted)
    again = slack.message(f"<@{BOT_USER_ID}> again", channel="G0MPIM")
    del again["channel_type"]
    await slack.send_event({**again, "type": "app_mention"})
    await slack.wait_for(lambda: len(slack.posted) == 2)
    keys = {s["sessionKey"] for s in (await client.call("sessions.list"))["sessions"]}
    assert keys == {"agent:main:slack:group:g0mpim"}


async def test_a_long_reply_is_split_into_slack_sized_messages(
    client: GatewayClient, slack: FakeSlack, fake: FakeProvider
) -> None:
    """A 9,000-character reply arrives in three posts of at most 4,000 characters, all in
    the thread it answers."""
    await start(client, slack, dmPolicy="open")
    words = " ".join(["word"] * 1800)
    fake.enqueue(words)
    parent = slack.next_ts()
    await slack.send_event(slack.message("talk a lot", thread_ts=parent))
    await slack.wait_for(lambda: len(slack.posted) == 3)
    assert all(len(p["text"]) <= 4000 for p in slack.posted)
    assert " ".join(p["text"] for p in slack.posted) == words
    assert {p["thread_ts"] for p in slack.posted} == {parent}


async def test_shared_files_reach_the_model(
    client: GatewayClient, slack: FakeSlack, fake: FakeProvider
) -> None:
    """An image is downloaded with the bot token and shown to the model; a document
    becomes a note."""
    await start(client, slack, dmPolicy="open")
    files = [slack.add_file("cat.png", PNG, "image/png"),
             slack.add_file("cv.pdf", b"%PDF-1.4 fake", "application/pdf")]  # fmt: skip
    await slack.send_event(slack.message("look", subtype="file_share", files=files))
    await slack.wait_for(lambda: slack.posted)
    assert slack.file_fetches == [BOT_TOKEN, BOT_TOKEN]
    blocks = fake.requests[0].messages[-1]["content"]
    image = next(b for b in blocks if b["type"] == "image")
    assert base64.b64decode(image["data"]) == PNG
    text = last_user_text(fake)
    assert "look" in text and "[Document attached: cv.pdf" in text


async def test_the_socket_is_reopened_after_the_network_drops(
    client: GatewayClient, slack: FakeSlack, fake: FakeProvider
) -> None:
    """The socket dies without a goodbye: the adapter opens a new one (a fresh
    apps.connections.open) and keeps receiving."""
    await start(client, slack, dmPolicy="open")
    await slack.drop()
    await slack.wait_for(lambda: slack.sessions == 2)
    opened = [c for c in slack.calls if c.method == "apps.connections.open"]
    assert len(opened) == 2 and all(c.token == APP_TOKEN for c in opened)
    fake.enqueue("still here")
    await slack.send_event(slack.message("are you there?"))
    await slack.wait_for(lambda: slack.posted)
    assert slack.posted[0]["text"] == "still here"
    assert (await status(client))["connected"] is True


async def test_a_disconnect_request_opens_a_new_socket(
    client: GatewayClient, slack: FakeSlack
) -> None:
    """Slack's `disconnect` message (socket rotation) is followed by a new connection."""
    await start(client, slack)
    await slack.send_raw({"type": "disconnect", "reason": "refresh_requested"})
    await slack.wait_for(lambda: slack.sessions == 2)


async def test_own_messages_edits_and_bots_are_ignored(
    client: GatewayClient, slack: FakeSlack, fake: FakeProvider
) -> None:
    """The bot's own posts, other bots, edits and joins are acknowledged and dropped."""
    await start(client, slack, dmPolicy="open")
    ignored = [
        slack.message("my own echo", user=BOT_USER_ID),
        slack.message("beep", bot_id="B0OTHER"),
        slack.message("edited", subtype="message_changed"),
        slack.message("<@U0BOB> has joined", user=BOB, subtype="channel_join"),
        {"type": "reaction_added", "user": ADA, "reaction": "+1"},
    ]
    for event in ignored:
        await slack.wait_acked(await slack.send_event(event))
    fake.enqueue("only this")
    await slack.send_event(slack.message("a real one"))
    await slack.wait_for(lambda: slack.posted)
    assert [p["text"] for p in slack.posted] == ["only this"]
    assert len(fake.requests) == 1


async def test_a_rejected_bot_token_is_a_clear_error(
    client: GatewayClient, slack: FakeSlack
) -> None:
    """auth.test refuses the bot token: channel.start fails saying which token, and the
    status shows the error."""
    await configure(client, slack, botToken="xoxb-0000-wrong")
    with pytest.raises(Unauthorized, match=r"slack rejected the bot token \(invalid_auth\)"):
        await client.call("channel.start", {"channel": "slack"})
    failed = await status(client)
    assert failed["connected"] is False and failed["authenticated"] is False
    assert "channels.slack.botToken" in failed["error"]
    assert slack.sessions == 0


async def test_a_rejected_app_token_is_a_clear_error(
    client: GatewayClient, slack: FakeSlack
) -> None:
    """apps.connections.open refuses the app token: the error names the app token."""
    await configure(client, slack, appToken="xapp-1-wrong")
    with pytest.raises(Unauthorized, match=r"slack rejected the app token \(invalid_auth\)"):
        await client.call("channel.start", {"channel": "slack"})
    failed = await status(client)
    assert failed["authenticated"] is True and failed["connected"] is False
    assert "channels.slack.appToken" in failed["error"]


async def test_an_account_keeps_one_web_api_connection_and_stop_closes_it(
    client: GatewayClient, slack: FakeSlack, fake: FakeProvider
) -> None:
    """auth.test, apps.connections.open and the replies share one HTTP connection (no new
    connection and TLS handshake per call); `channel.stop` closes it."""
    await start(client, slack, dmPolicy="open")
    fake.enqueue("hi")
    await slack.send_event(slack.message("hello"))
    await slack.wait_for(lambda: slack.posted)
    assert len(slack.calls) >= 3 and len(slack.api_connections) == 1
    await client.call("channel.stop", {"channel": "slack"})
    await until(lambda: slack.open_api_connections() == 0, "the connection to close")


@pytest.mark.parametrize("wrong", [{"botToken": "xoxb-0000-wrong"}, {"appToken": "xapp-1-wrong"}])
async def test_a_start_refused_at_first_connect_leaves_no_connection_open(
    client: GatewayClient, slack: FakeSlack, wrong: dict[str, str]
) -> None:
    """A rejected token ends `channel.start` with nothing left running: the account's
    Web API client is closed, not left to hold its connection until garbage collection."""
    await configure(client, slack, **wrong)
    with pytest.raises(Unauthorized):
        await client.call("channel.start", {"channel": "slack"})
    assert slack.api_connections
    await until(lambda: slack.open_api_connections() == 0, "the connection to close")


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"appToken": None}, "channels.slack.appToken is not set"),
        ({"botToken": "xoxp-user-token"}, "channels.slack.botToken does not start with xoxb-"),
        ({"apiBaseUrl": "ftp://nope"}, "apiBaseUrl must be an http"),
    ],
)
async def test_bad_settings_are_refused_before_connecting(
    client: GatewayClient, slack: FakeSlack, settings: dict[str, Any], message: str
) -> None:
    """Missing or wrong-kind tokens are named (never echoed) before anything is sent."""
    await configure(client, slack, **settings)
    with pytest.raises(InvalidParams, match=message) as caught:
        await client.call("channel.start", {"channel": "slack"})
    assert "user-token" not in str(caught.value)
    assert slack.calls == []


async def test_an_unreachable_slack_is_retried_with_backoff(
    client: GatewayClient, gw: RunningGateway
) -> None:
    """Slack down at start is not fatal: the status says so, the account waits a backoff
    and connects once Slack is back."""
    gate = asyncio.Event()
    pauses: list[float] = []

    async def paced(seconds: float) -> None:
        pauses.append(seconds)
        await gate.wait()

    async with fake_slack() as probe:
        port = probe.port  # nobody listens here once this block ends
    gw.gateway.channels.adapters["slack"] = SlackChannel(sleep=paced)
    await client.call("config.set", {"path": "channels.slack", "value": {
        "appToken": APP_TOKEN, "botToken": BOT_TOKEN,
        "apiBaseUrl": f"http://127.0.0.1:{port}/api/"}})  # fmt: skip
    await client.call("channel.start", {"channel": "slack"})
    down = await status(client)
    assert down["connected"] is False and down["error"].startswith("slack unreachable")
    await until(lambda: pauses, "a backoff pause")
    assert 0.5 <= pauses[0] <= 1.0  # the first pause: half fixed, half random, of 1 s
    async with fake_slack(port) as slack:
        gate.set()
        await slack.wait_for(lambda: slack.sessions == 1)
        up = await status(client)
        assert up["connected"] is True and up["authenticated"] is True and "error" not in up
        await client.call("channel.stop", {"channel": "slack"})


async def test_tokens_never_reach_logs_or_config_reads(
    client: GatewayClient, slack: FakeSlack, fake: FakeProvider, caplog: pytest.LogCaptureFixture
) -> None:
    """A whole session (start, messages, a reply, a reconnect, a refused token) logs
    neither token, even at DEBUG; config.get masks both."""
    caplog.set_level(logging.DEBUG)
    await start(client, slack, dmPolicy="open")
    await slack.send_event(slack.message("hello"))
    await slack.wait_for(lambda: slack.posted)
    await slack.drop()
    await slack.wait_for(lambda: slack.sessions == 2)
    await configure(client, slack, botToken="xoxb-9999-also-secret")
    with pytest.raises(Unauthorized):
        await client.call("channel.start", {"channel": "slack"})
    for secret in (BOT_TOKEN, APP_TOKEN, "xoxb-9999-also-secret"):
        assert secret not in caplog.text
    read = await client.call("config.get", {"path": "channels.slack"})
    assert read["value"]["appToken"] == "***" and read["value"]["botToken"] == "***"
    whole = json.dumps(await client.call("config.get"))
    assert APP_TOKEN not in whole and "xoxb-9999-also-secret" not in whole


async def test_login_explains_how_to_create_the_slack_app(client: GatewayClient) -> None:
    """channel.login walks through the app set-up and the two config commands."""
    result = await client.call("channel.login", {"channel": "slack"})
    message = result["message"]
    assert "Socket Mode" in message and "connections:write" in message
    assert "gsv config set channels.slack.appToken xapp-" in message
    assert "gsv config set channels.slack.botToken xoxb-" in message
    other = await client.call("channel.login", {"channel": "slack", "accountId": "work"})
    assert "channels.slack.accounts.work.botToken" in other["message"]


def test_markdown_becomes_mrkdwn() -> None:
    """Bold, italic, strike, code, links, headings, lists, quotes; &, <, > escaped."""
    markdown = (
        "# Plan\n**bold**, *it*, _it_, ~~old~~, `a<b>` & [site](https://x.y/?a=1&b=2)\n"
        "- one\n* two\n1. first\n> quoted <tag>\n```python\nif a < b: **x**\n```\n__init__"
    )
    assert to_mrkdwn(markdown) == (
        "*Plan*\n*bold*, _it_, _it_, ~old~, `a&lt;b&gt;` &amp; <https://x.y/?a=1&amp;b=2|site>\n"
        "• one\n• two\n1. first\n> quoted &lt;tag&gt;\n```\nif a &lt; b: **x**\n```\n__init__"
    )


def test_slack_markup_becomes_plain_text() -> None:
    """Mentions, channels, links and entities read naturally; mention ids are collected."""
    raw = "<@U0BOT> ask <@U1|ann> in <#C1|general>: <https://a.b|site>, <https://c.d> &lt;3 &amp;"
    assert to_plain(raw, {"U0BOT": "gsv"}) == (
        "@gsv ask @ann in #general: site (https://a.b), https://c.d <3 &"
    )
    assert mentioned_ids(raw + " <@U0BOT>") == ("U0BOT", "U1")
