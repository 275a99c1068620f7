"""The seam between the Discord adapter and discord.py: a small `DiscordGateway` protocol,
the plain shapes that cross it, and `DiscordPyGateway`, its real implementation on
`discord.Client`.

discord.py has no base-URL option, so the adapter (`gsv_core.channels.discord`) cannot be
pointed at a fake Discord the way Telegram's can. Everything the adapter needs from
Discord goes through this protocol instead; tests drive the adapter with a fake that
implements it, and only `DiscordPyGateway` touches discord.py:

    gateway = DiscordPyGateway(token)
    await gateway.login()              # checks the token (Unauthorized when rejected)
    await gateway.run(events)          # receives until close(); events.message(...) per message
    await gateway.send(DiscordPost("1234", "hi", reply_to="5678"))   # -> message id
    await gateway.edit("1234", message_id, "settled")   # new text, buttons removed

A message goes out with embeds suppressed (flag SUPPRESS_EMBEDS: Discord fetches no link
to preview it) unless its `DiscordPost.suppress_embeds` is False. An edit sends no flags,
and Discord keeps the ones the message was sent with.

Buttons are message components (a `discord.ui.View` of buttons); a press is an
interaction, reported as `events.press(...)`, whose returned text answers it privately
(an ephemeral reply; nothing to say: the press is just acknowledged).

The contract on failures: `login` and `run` raise a `GsvError` only when retrying cannot
help (token rejected, Message Content intent not enabled); any other exception is a
network failure the caller retries with backoff. discord.py rides out gateway
disconnects by itself and reports them through `events.connection(...)`.

discord.py is imported only when a `DiscordPyGateway` is built, so importing this module
(and the gateway's composition root) stays cheap. Its HTTP goes through aiohttp; a
`DiscordPyGateway` may be given a connector factory for it (tests route it to a fake
Discord on 127.0.0.1 that way: discord.py has no base-URL option).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any
from typing import Protocol

from gsv_core.channels.base import Action
from gsv_core.errors import Forbidden
from gsv_core.errors import GsvError
from gsv_core.errors import InvalidParams
from gsv_core.errors import NotFound
from gsv_core.errors import RateLimited
from gsv_core.errors import Unauthorized
from gsv_core.errors import Unavailable

if TYPE_CHECKING:
    import aiohttp
    import discord

log = logging.getLogger(__name__)

TOKEN_REJECTED = "discord rejected the bot token"
INTENT_MISSING = (
    "discord refused the Message Content intent: enable it for the bot in the Developer "
    "Portal (Bot > Privileged Gateway Intents > Message Content Intent)"
)
FETCH_TIMEOUT = 60.0  # seconds for one attachment download
_AUTH_FAILED = 4004  # gateway close code: the token is not valid
_FATAL_CLOSE = {
    4010: "discord refused the shard settings",
    4011: "discord requires sharding for this bot",
    4012: "discord refused the gateway API version",
    4013: "discord refused the gateway intents",
    4014: INTENT_MISSING,
}


# -- the shapes that cross the seam ------------------------------------------------------


@dataclass(frozen=True)
class DiscordAuthor:
    id: str
    name: str  # display name (server nickname, global name or username)
    handle: str  # the unique username
    bot: bool = False


@dataclass(frozen=True)
class DiscordAttachment:
    url: str  # a signed CDN address; fetch it with `fetch_attachment`
    filename: str
    size: int  # bytes, as Discord declares it
    content_type: str | None = None
    duration: float | None = None  # seconds, voice messages only


@dataclass(frozen=True)
class DiscordMessage:
    """One received Discord message. `channel_id` is where it was posted: the DM channel,
    the server channel, or the thread itself (a Discord thread is a channel of its own,
    with `parent_id` its server channel)."""

    id: str
    channel_id: str
    kind: str  # dm | group | channel | thread
    author: DiscordAuthor
    content: str  # mentions rendered as @name
    timestamp_ms: int
    channel_name: str | None = None
    guild_id: str | None = None
    parent_id: str | None = None
    mention_ids: tuple[str, ...] = ()  # users mentioned (the bot too, via its own role)
    reply_to_id: str | None = None
    reply_to_author_id: str | None = None
    reply_to_text: str | None = None
    attachments: tuple[DiscordAttachment, ...] = ()


@dataclass(frozen=True)
class DiscordPress:
    """A button pressed on one of the bot's messages (a component interaction)."""

    custom_id: str  # the Action id the button was sent with
    channel_id: str
    kind: str  # dm | group | channel | thread
    user: DiscordAuthor
    message_id: str | None = None
    channel_name: str | None = None


class DiscordEvents(Protocol):
    """What a `DiscordGateway` reports to (implemented by the adapter, one per account)."""

    async def message(self, message: DiscordMessage) -> None: ...

    async def press(self, press: DiscordPress) -> str | None:
        """A button press; returns the text to answer the presser with (None: none)."""
        ...

    def connection(self, connected: bool, reason: str | None) -> None:
        """The gateway connection came up (reason None) or was lost (reason says why)."""
        ...


@dataclass(frozen=True)
class DiscordPost:
    """A message to post (at most 2,000 characters) to a channel, or to `thread_id` when
    given, as a reply to message `reply_to` when given, with `actions` as buttons and link
    previews (embeds) suppressed unless told otherwise."""

    channel_id: str
    text: str
    reply_to: str | None = None
    thread_id: str | None = None
    actions: tuple[Action, ...] = ()
    suppress_embeds: bool = True  # the flag that keeps Discord from previewing links


class DiscordGateway(Protocol):
    """One bot's connection to Discord: the whole of what the adapter asks of discord.py."""

    bot_user_id: str | None  # known after login
    bot_name: str | None

    async def login(self) -> None:
        """Check the token (Unauthorized when Discord rejects it). Idempotent."""
        ...

    async def run(self, events: DiscordEvents) -> None:
        """Log in if needed, connect and report to `events` until `close()`."""
        ...

    async def close(self) -> None: ...

    async def send(self, post: DiscordPost) -> str:
        """Post a message; returns the new message id. Failures raise gsv errors."""
        ...

    async def edit(self, channel_id: str, message_id: str, text: str) -> None:
        """Replace the text of the bot's message and remove its buttons."""
        ...

    async def typing(self, channel_id: str) -> None:
        """Show "typing..." in a channel for about ten seconds."""
        ...

    async def fetch_attachment(self, url: str, max_bytes: int) -> bytes:
        """Download an attachment; stops after `max_bytes + 1` bytes so the caller can
        tell an oversized file without holding it all."""
        ...


# -- the real implementation on discord.py -----------------------------------------------


def load_discord() -> None:
    """Import discord.py. It imports `audioop` for voice (deprecated since Python 3.11);
    gsv never uses voice, so that one warning is silenced rather than logged per start."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "'audioop' is deprecated", DeprecationWarning)
        import discord  # noqa: F401


class DiscordPyGateway:
    """`DiscordGateway` on a `discord.Client` with the Message Content intent. A client
    that discord.py closed (bad token, fatal close code) cannot be reused, so each run
    after a failure logs in with a fresh one."""

    def __init__(
        self, token: str, *, connector: Callable[[], aiohttp.BaseConnector] | None = None
    ) -> None:
        load_discord()
        self._token = token
        self._connector = connector  # a fresh one per client: a closed client closes it
        self._client: discord.Client | None = None
        self._events: DiscordEvents | None = None
        self.bot_user_id: str | None = None
        self.bot_name: str | None = None

    def build_client(self) -> discord.Client:
        """A client with the intents gsv needs, its events wired to the current `run`."""
        import discord

        intents = discord.Intents.default()
        intents.message_content = True  # privileged: without it guild messages are empty
        client = discord.Client(
            intents=intents,
            # the agent's text must never ping a whole server
            allowed_mentions=discord.AllowedMentions(everyone=False, roles=False, users=True),
            connector=self._connector() if self._connector else None,
        )

        async def on_ready() -> None:
            self._remember_user(client)
            self._connection(True, None)

        async def on_resumed() -> None:
            self._connection(True, None)

        async def on_disconnect() -> None:
            self._connection(False, "connection to Discord lost; reconnecting")

        async def on_message(message: discord.Message) -> None:
            converted = message_from_discord(message, self.bot_user_id)
            if converted is not None and self._events is not None:
                await self._events.message(converted)

        async def on_interaction(interaction: discord.Interaction) -> None:
            press = press_from_discord(interaction)
            if press is None or self._events is None:
                return
            answer = await self._events.press(press)
            try:
                if answer:
                    await interaction.response.send_message(answer, ephemeral=True)
                else:
                    await interaction.response.defer()
            except discord.HTTPException as exc:
                log.info("discord could not answer a button press: %s", exc.text or exc.status)

        for handler in (on_ready, on_resumed, on_disconnect, on_message, on_interaction):
            client.event(handler)
        return client

    def _connection(self, connected: bool, reason: str | None) -> None:
        if self._events is not None:
            self._events.connection(connected, reason)

    def _remember_user(self, client: discord.Client) -> None:
        if client.user is not None:
            self.bot_user_id, self.bot_name = str(client.user.id), client.user.name

    async def login(self) -> None:
        import discord

        if self._client is not None:
            return
        client = self.build_client()
        try:
            await client.login(self._token)
        except discord.LoginFailure:
            await client.close()
            raise Unauthorized(TOKEN_REJECTED) from None
        except BaseException:
            await client.close()
            raise
        self._client = client
        self._remember_user(client)

    async def run(self, events: DiscordEvents) -> None:
        import discord

        await self.login()
        client = self._require()
        self._events = events
        try:
            await client.connect(reconnect=True)
        except discord.PrivilegedIntentsRequired:
            raise Forbidden(INTENT_MISSING) from None
        except discord.ConnectionClosed as exc:
            if exc.code == _AUTH_FAILED:
                raise Unauthorized(TOKEN_REJECTED) from None
            if exc.code in _FATAL_CLOSE:
                raise GsvError(f"{_FATAL_CLOSE[exc.code]} (close code {exc.code})") from None
            raise
        finally:
            self._client = None
            if not client.is_closed():
                await client.close()

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    def _require(self) -> discord.Client:
        if self._client is None:
            raise Unavailable("discord is not connected")
        return self._client

    async def send(self, post: DiscordPost) -> str:
        import aiohttp
        import discord

        reply_to = post.reply_to
        target_id = _snowflake(post.thread_id or post.channel_id)  # refused before any request
        target = self._require().get_partial_messageable(target_id)
        reference = None
        if reply_to and reply_to.isdigit():
            # a reply to a deleted message still goes out, as a plain message
            reference = discord.MessageReference(
                message_id=int(reply_to), channel_id=target.id, fail_if_not_exists=False
            )
        options: dict[str, Any] = {"suppress_embeds": post.suppress_embeds}
        if reference is not None:
            options["reference"] = reference
        view = _view(post.actions)
        if view is not None:
            options["view"] = view
        try:
            sent = await target.send(post.text, **options)
        except discord.HTTPException as exc:
            raise _http_error(exc, target.id) from None
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise Unavailable(f"discord unreachable: {exc or type(exc).__name__}") from None
        return str(sent.id)

    async def edit(self, channel_id: str, message_id: str, text: str) -> None:
        import aiohttp
        import discord

        target = self._require().get_partial_messageable(_snowflake(channel_id))
        message = target.get_partial_message(_snowflake(message_id))
        try:
            await message.edit(content=text, view=None)
        except discord.HTTPException as exc:
            raise _http_error(exc, target.id) from None
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise Unavailable(f"discord unreachable: {exc or type(exc).__name__}") from None

    async def typing(self, channel_id: str) -> None:
        target_id = _snowflake(channel_id)
        await self._require().get_partial_messageable(target_id).typing()

    async def fetch_attachment(self, url: str, max_bytes: int) -> bytes:
        import aiohttp  # discord.py's own HTTP library

        timeout = aiohttp.ClientTimeout(total=FETCH_TIMEOUT)
        async with aiohttp.ClientSession(timeout=timeout) as session, session.get(url) as resp:
            if resp.status != 200:
                raise Unavailable(f"discord attachment download failed: HTTP {resp.status}")
            data = bytearray()
            async for chunk in resp.content.iter_chunked(64 * 1024):
                data += chunk
                if len(data) > max_bytes:
                    break  # the caller only needs to know it is too big
            return bytes(data[: max_bytes + 1])


def _view(actions: tuple[Action, ...]) -> discord.ui.View | None:
    """Buttons for a message. Presses arrive as interactions (`on_interaction`), so the
    buttons need no callbacks of their own; the view never times out."""
    if not actions:
        return None
    import discord

    styles = {"primary": discord.ButtonStyle.success, "danger": discord.ButtonStyle.danger}
    view = discord.ui.View(timeout=None)
    for action in actions:
        style = styles.get(action.style, discord.ButtonStyle.secondary)
        view.add_item(discord.ui.Button(label=action.label, custom_id=action.id, style=style))
    return view


def press_from_discord(interaction: discord.Interaction) -> DiscordPress | None:
    """The seam's shape of a button press; None for other interactions."""
    import discord

    data: dict[str, Any] = dict(interaction.data or {})
    custom_id = data.get("custom_id")
    if interaction.type != discord.InteractionType.component or not isinstance(custom_id, str):
        return None
    channel = interaction.channel
    if isinstance(channel, discord.Thread):
        kind = "thread"
    elif isinstance(channel, discord.GroupChannel):
        kind = "group"
    else:
        kind = "dm" if interaction.guild_id is None else "channel"
    user = interaction.user
    message = interaction.message
    return DiscordPress(
        custom_id=custom_id,
        channel_id=str(interaction.channel_id),
        kind=kind,
        user=DiscordAuthor(str(user.id), user.display_name, user.name, user.bot),
        message_id=str(message.id) if message is not None else None,
        channel_name=getattr(channel, "name", None),
    )


def _snowflake(value: str) -> int:
    if not value.isdigit():
        raise InvalidParams(f"not a Discord channel id: {value!r}")
    return int(value)


def _http_error(exc: discord.HTTPException, channel_id: int) -> GsvError:
    import discord

    text = (exc.text or "").strip()[:200]
    if isinstance(exc, discord.Forbidden):
        return Forbidden(f"discord refused to post in channel {channel_id}: {text or 'no access'}")
    if isinstance(exc, discord.NotFound):
        return NotFound(f"discord has no channel {channel_id} the bot can see")
    if exc.status == 429:
        return RateLimited("discord rate limit")
    if 400 <= exc.status < 500:
        return InvalidParams(f"discord rejected the message: {text or exc.status}")
    return Unavailable(f"discord error {exc.status}: {text}")


def message_from_discord(
    message: discord.Message, bot_user_id: str | None
) -> DiscordMessage | None:
    """The seam's shape of a discord.py message; None for system messages (joins, pins,
    thread starts) which are not conversation."""
    import discord

    if message.type not in (discord.MessageType.default, discord.MessageType.reply):
        return None
    channel = message.channel
    kind, name, parent = _place(message)
    author = message.author
    mention_ids = [str(user.id) for user in message.mentions]
    guild = message.guild
    self_role = guild.self_role if guild is not None else None
    if bot_user_id and self_role is not None and self_role.id in message.raw_role_mentions:
        mention_ids.append(bot_user_id)  # "@Bot" picked from the list can be its role
    reference = message.reference
    replied = reference.resolved if reference is not None else None
    replied_message = replied if isinstance(replied, discord.Message) else None
    return DiscordMessage(
        id=str(message.id),
        channel_id=str(channel.id),
        kind=kind,
        author=DiscordAuthor(str(author.id), author.display_name, author.name, author.bot),
        content=message.clean_content,
        timestamp_ms=int(message.created_at.timestamp() * 1000),
        channel_name=name,
        guild_id=str(guild.id) if guild is not None else None,
        parent_id=parent,
        mention_ids=tuple(dict.fromkeys(mention_ids)),
        reply_to_id=str(reference.message_id) if reference and reference.message_id else None,
        reply_to_author_id=str(replied_message.author.id) if replied_message else None,
        reply_to_text=replied_message.content if replied_message else None,
        attachments=tuple(
            DiscordAttachment(a.url, a.filename, a.size, a.content_type, a.duration)
            for a in message.attachments
        ),
    )


def _place(message: discord.Message) -> tuple[str, str | None, str | None]:
    """(kind, channel name, parent channel id) of where a message was posted."""
    import discord

    channel = message.channel
    if isinstance(channel, discord.Thread):
        return "thread", channel.name, str(channel.parent_id)
    if isinstance(channel, discord.GroupChannel):
        return "group", channel.name, None
    if message.guild is None:
        return "dm", None, None
    return "channel", getattr(channel, "name", None), None
