"""Sending to Discord through the fake seam: replies, 2,000-character pieces, errors,
typing."""

from __future__ import annotations

import pytest

from gsv_core.channels.base import OutboundMessage
from gsv_core.channels.base import Peer
from gsv_core.channels.discord import MAX_TEXT
from gsv_core.channels.discord import DiscordChannel
from gsv_core.errors import Forbidden
from gsv_core.errors import Unavailable
from tests.fakes.discord_seam import DM_CHANNEL
from tests.fakes.discord_seam import GENERAL
from tests.fakes.discord_seam import THREAD
from tests.fakes.discord_seam import TOKEN
from tests.fakes.discord_seam import FakeDiscord
from tests.fakes.discord_seam import Sent


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
