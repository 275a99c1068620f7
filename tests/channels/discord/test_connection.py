"""The Discord token, connecting and reconnecting (backoff, intents, revocation, stop),
the token kept out of logs, login instructions, capabilities."""

from __future__ import annotations

import logging
import random
from typing import Any

import pytest

from gsv_core.channels.base import OutboundMessage
from gsv_core.channels.base import Peer
from gsv_core.channels.discord import DiscordChannel
from gsv_core.channels.discord.seam import INTENT_MISSING
from gsv_core.channels.discord.seam import TOKEN_REJECTED
from gsv_core.errors import Forbidden
from gsv_core.errors import InvalidParams
from gsv_core.errors import Unauthorized
from gsv_core.errors import Unavailable
from tests.fakes.channel_sink import RecordingSink
from tests.fakes.channel_sink import Sleeps
from tests.fakes.discord_seam import DM_CHANNEL
from tests.fakes.discord_seam import TOKEN
from tests.fakes.discord_seam import FakeDiscord
from tests.fakes.discord_seam import dm
from tests.fakes.discord_seam import receive


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
