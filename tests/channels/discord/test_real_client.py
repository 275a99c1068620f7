"""The real discord.py wrapper, as far as works offline: intents, event wiring, converting
discord.py messages built from gateway payloads, attachment downloads from a local HTTP
server, and its login, sends and edits over HTTPS to a fake Discord REST API (the bodies
discord.py really sends). Its gateway connection and typing need Discord itself and are
not tested here."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import pytest

from gsv_core.channels.base import Action
from gsv_core.channels.discord.seam import DiscordAttachment
from gsv_core.channels.discord.seam import DiscordAuthor
from gsv_core.channels.discord.seam import DiscordMessage
from gsv_core.channels.discord.seam import DiscordPost
from gsv_core.channels.discord.seam import DiscordPyGateway
from gsv_core.channels.discord.seam import message_from_discord
from gsv_core.errors import InvalidParams
from gsv_core.errors import Unavailable
from tests.fakes.discord_api import FakeDiscordAPI
from tests.fakes.discord_api import fake_discord_api
from tests.fakes.discord_seam import ADA
from tests.fakes.discord_seam import BOT_ID
from tests.fakes.discord_seam import DM_CHANNEL
from tests.fakes.discord_seam import GENERAL
from tests.fakes.discord_seam import GUILD
from tests.fakes.discord_seam import THREAD
from tests.fakes.discord_seam import TOKEN
from tests.waiting import WAIT


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
        await gateway.send(DiscordPost(DM_CHANNEL, "hi"))
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
        async with asyncio.timeout(WAIT):
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
        await gateway.send(DiscordPost("general", "hi"))
    with pytest.raises(InvalidParams, match="not a Discord channel id"):
        await gateway.typing("#general")


# -- over HTTPS to a fake Discord REST API ------------------------------------------------

LINK = "see https://evil.example/?d=secret"
SUPPRESS_EMBEDS = 1 << 2  # the message flag: Discord makes no embed (preview) of a link


@pytest.fixture
async def discord_api(tmp_path: Path) -> AsyncIterator[FakeDiscordAPI]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: cannot make the fake Discord's certificate")
    async with fake_discord_api(tmp_path) as api:
        yield api


@pytest.fixture
async def logged_in(discord_api: FakeDiscordAPI) -> AsyncIterator[DiscordPyGateway]:
    gateway = DiscordPyGateway(TOKEN, connector=discord_api.connector)
    await gateway.login()
    yield gateway
    await gateway.close()


async def test_the_real_client_posts_with_link_previews_suppressed(
    logged_in: DiscordPyGateway, discord_api: FakeDiscordAPI
) -> None:
    """discord.py's POST of a message carries the SUPPRESS_EMBEDS flag (Discord fetches no
    link in it), with a reply reference and buttons too; its edit sends no flags, so the
    message keeps the one it was sent with."""
    assert (logged_in.bot_user_id, logged_in.bot_name) == (BOT_ID, "gsv-bot")
    plain = await logged_in.send(DiscordPost(DM_CHANNEL, LINK))
    allow = Action("approve:ab12cd:allow", "Allow", "primary")
    prompt = await logged_in.send(DiscordPost(GENERAL, LINK, "1234567890123456789", None, (allow,)))
    posts = discord_api.sent("POST")
    assert [(p.path, p.body["content"], p.body["flags"]) for p in posts] == [
        (f"/api/v10/channels/{DM_CHANNEL}/messages", LINK, SUPPRESS_EMBEDS),
        (f"/api/v10/channels/{GENERAL}/messages", LINK, SUPPRESS_EMBEDS),
    ]
    assert posts[1].body["message_reference"]["message_id"] == 1234567890123456789
    assert posts[1].body["components"], "the buttons went with it"
    await logged_in.edit(GENERAL, prompt, f"{LINK}\n\nApproved.")
    [patch] = discord_api.sent("PATCH")
    assert patch.path == f"/api/v10/channels/{GENERAL}/messages/{prompt}"
    assert patch.body["components"] == [] and "flags" not in patch.body
    assert discord_api.messages[prompt]["flags"] == SUPPRESS_EMBEDS
    assert discord_api.messages[plain]["flags"] == SUPPRESS_EMBEDS


async def test_the_real_client_lets_discord_preview_links_when_told(
    logged_in: DiscordPyGateway, discord_api: FakeDiscordAPI
) -> None:
    """suppress_embeds=False (the owner turned link previews on): the POST carries no
    flags, so Discord shows its embeds."""
    await logged_in.send(DiscordPost(DM_CHANNEL, LINK, suppress_embeds=False))
    [post] = discord_api.sent("POST")
    assert post.body["content"] == LINK and "flags" not in post.body
