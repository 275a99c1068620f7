"""The Telegram token, starting and reconnecting, the token kept out of logs, login
instructions, capabilities."""

from __future__ import annotations

import logging
import random
from typing import Any

import pytest

from gsv_core.channels.base import OutboundMessage
from gsv_core.channels.base import Peer
from gsv_core.channels.telegram import TOKEN_REJECTED
from gsv_core.channels.telegram import TelegramChannel
from gsv_core.errors import InvalidParams
from gsv_core.errors import Unauthorized
from gsv_core.errors import Unavailable
from tests.fakes.channel_sink import RecordingSink
from tests.fakes.channel_sink import Sleeps
from tests.fakes.telegram_adapter import SECRET
from tests.fakes.telegram_adapter import bot_config
from tests.fakes.telegram_adapter import receive
from tests.fakes.telegram_api import ADA
from tests.fakes.telegram_api import FakeTelegramAPI
from tests.fakes.telegram_api import private_chat


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
