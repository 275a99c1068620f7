"""The Discord adapter: bot accounts over Discord's gateway, through the `DiscordGateway`
seam (`discord_seam`; the real one wraps discord.py's Client), one per account.

What it owns: turning Discord messages into `InboundMessage`s (DMs, server channels,
threads; mentions of the bot and replies to it; attachments downloaded into base64
Media under a size cap), sending replies (2,000 characters per message, the first piece
answering the inbound message), buttons (message components; a press goes to
`sink.action()` and its answer goes back privately to the presser), typing, the account
status, and the retry loop.

Peers: a DM is peer `dm` with the DM channel's id (the author is the sender, and the id
pairing approves); a server channel is peer `channel`; a thread is peer `thread` whose
id and `thread_id` are the thread's own id (a Discord thread is a channel, so each
thread is its own conversation).

Connection: discord.py reconnects its gateway socket by itself and reports the losses,
which show in the status; a login that cannot reach Discord is retried here with
jittered exponential backoff; a rejected token or a missing Message Content intent
stops the account with a clear status error. Discord does not redeliver a message, so a
hand-over the sink refuses is retried a few times and then logged as lost.

The bot token is a secret: it is masked in the records of this module, the seam and
discord.py, and in every message built from an exception.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from gsv_core.channels.base import (
    AccountStatus,
    ActionEvent,
    Capabilities,
    ChannelSink,
    InboundMessage,
    LoginResult,
    Media,
    OutboundMessage,
    Peer,
    Sender,
)
from gsv_core.channels.discord_seam import (
    DiscordAttachment,
    DiscordGateway,
    DiscordMessage,
    DiscordPress,
    DiscordPyGateway,
)
from gsv_core.channels.inbound import MAX_MEDIA_BYTES
from gsv_core.channels.shaping import split_text
from gsv_core.errors import GsvError, InvalidParams, Unauthorized, Unavailable

log = logging.getLogger(__name__)

MAX_TEXT = 2000  # Discord's limit for one message
HANDOVER_ATTEMPTS = 3
MODE = "websocket"
GatewayFactory = Callable[[str], DiscordGateway]

# -- keeping the token out of logs -------------------------------------------------------

_SECRETS: set[str] = set()
_LOGGERS = (
    __name__,
    "gsv_core.channels.discord_seam",
    "discord.client",
    "discord.gateway",
    "discord.http",
    "discord.state",
    "discord.shard",
)


def mask(text: str) -> str:
    """`text` with every registered bot token replaced."""
    for secret in tuple(_SECRETS):
        text = text.replace(secret, "<bot-token>")
    return text


class _TokenRedactor(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if not _SECRETS:
            return True
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            return True  # a malformed record is logging's problem, not a leak
        masked = mask(message)
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info and not record.exc_text:
            record.exc_text = mask(logging.Formatter().formatException(record.exc_info))
        return True


_REDACTOR = _TokenRedactor()


def _protect(token: str) -> None:
    _SECRETS.add(token)
    for name in _LOGGERS:
        logging.getLogger(name).addFilter(_REDACTOR)  # idempotent


def _reason(exc: BaseException) -> str:
    text = mask(str(exc)).strip() or type(exc).__name__
    return text[:200]


# -- per-account state -------------------------------------------------------------------


@dataclass
class _Account:
    status: AccountStatus
    sink: ChannelSink
    gateway: DiscordGateway
    failures: int = 0  # failed runs since the connection was last up
    task: asyncio.Task[None] | None = None


@dataclass
class _Listener:
    """The `DiscordEvents` of one account."""

    channel: DiscordChannel
    account: _Account

    async def message(self, message: DiscordMessage) -> None:
        await self.channel._receive(self.account, message)

    async def press(self, press: DiscordPress) -> str | None:
        return await self.channel._press(self.account, press)

    def connection(self, connected: bool, reason: str | None) -> None:
        self.channel._connection(self.account, connected, reason)


class DiscordChannel:
    """Discord bots (one per account id). `gateway_factory` builds the seam for a token;
    tests pass a fake, the gateway uses discord.py."""

    name = "discord"
    capabilities = Capabilities(
        chat_types=("dm", "group", "channel", "thread"),
        media=True,
        threads=True,
        typing=True,
        buttons=True,
        max_text=MAX_TEXT,
    )

    def __init__(
        self,
        gateway_factory: GatewayFactory = DiscordPyGateway,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
        max_attachment_bytes: int = MAX_MEDIA_BYTES,
        max_backoff: float = 30.0,
    ) -> None:
        self._factory = gateway_factory
        self._sleep = sleep
        self._clock = clock
        self._rng = rng or random.Random()
        self._max_attachment = max_attachment_bytes
        self._max_backoff = max_backoff
        self._accounts: dict[str, _Account] = {}
        self._statuses: dict[str, AccountStatus] = {}

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self, account_id: str, config: dict[str, Any], sink: ChannelSink) -> None:
        """Check the token, then connect in the background. An unreachable Discord is not
        fatal (the gateway may boot before the network): the account keeps trying."""
        token = _token(config, account_id)
        await self.stop(account_id)
        _protect(token)
        gateway = self._factory(token)
        status = AccountStatus(account_id, mode=MODE)
        self._statuses[account_id] = status
        account = _Account(status, sink, gateway)
        try:
            await account.gateway.login()
        except GsvError as exc:
            await account.gateway.close()
            error = _reason(exc)
            self._update(account, connected=False, authenticated=False, error=error)
            key = _token_key(account_id)
            hint = f" (check {key})" if isinstance(exc, Unauthorized) else ""
            raise type(exc)(error + hint) from None
        except Exception as exc:
            self._lost(account, exc)
            account.failures = 1  # the background loop waits before trying again
        else:
            self._authenticated(account)
        self._accounts[account_id] = account
        account.task = asyncio.create_task(self._run(account), name=f"discord:{account_id}")

    async def stop(self, account_id: str) -> None:
        account = self._accounts.pop(account_id, None)
        if account is None:
            return
        if account.task is not None:
            account.task.cancel()
            await asyncio.wait([account.task])  # our own cancellation still propagates
        try:
            await account.gateway.close()
        except Exception as exc:  # closing a broken connection must not fail the stop
            log.info("discord account %s closed uncleanly: %s", account_id, _reason(exc))
        self._update(account, connected=False)
        log.info("discord account %s stopped", account_id)

    def status(self, account_id: str | None = None) -> list[AccountStatus]:
        return [
            replace(s, extra=dict(s.extra))
            for key, s in self._statuses.items()
            if account_id in (None, key)
        ]

    async def login(self, account_id: str, force: bool) -> LoginResult:
        account = self._accounts.get(account_id)
        if account is not None and account.status.connected and not force:
            return LoginResult(f"Discord bot {account.gateway.bot_name} is connected.")
        default = account_id in ("", "default")
        start = "gsv channels start discord" + ("" if default else f" {account_id}")
        return LoginResult(
            "Discord has no QR login: a bot signs in with its token.\n"
            "1. Open https://discord.com/developers/applications, create an application "
            "(New Application), open Bot and press Reset Token to get the token.\n"
            "2. On the same Bot page, under Privileged Gateway Intents, turn on "
            "Message Content Intent (without it the bot cannot read messages).\n"
            "3. Invite the bot to your server: OAuth2 > URL Generator, scope `bot`, "
            "permissions Send Messages, Send Messages in Threads, Read Message History; "
            "open the URL. (People can DM the bot once they share a server with it.)\n"
            f"4. gsv config set {_token_key(account_id)} <the token>\n"
            f"5. {start}"
        )

    async def logout(self, account_id: str) -> None:
        await self.stop(account_id)
        log.info(
            "discord account %s logged out; its token stays in config (%s)",
            account_id,
            _token_key(account_id),
        )

    # -- connecting ----------------------------------------------------------------------

    async def _run(self, account: _Account) -> None:
        """Run the gateway until stopped, starting it again after network failures."""
        account_id = account.status.account_id
        while True:
            if account.failures:
                await self._sleep(self._backoff(account.failures))
            try:
                await account.gateway.run(_Listener(self, account))
            except GsvError as exc:  # the seam's word for "retrying cannot help"
                authenticated = not isinstance(exc, Unauthorized) and account.status.authenticated
                self._update(
                    account, connected=False, authenticated=authenticated, error=_reason(exc)
                )
                log.error("discord account %s stopped: %s", account_id, _reason(exc))
                return
            except Exception as exc:
                self._lost(account, exc)
            else:
                self._lost(account, None)  # the connection ended without our stop
            account.failures += 1

    def _lost(self, account: _Account, exc: Exception | None) -> None:
        reason = f"discord unreachable: {_reason(exc)}" if exc else "discord connection closed"
        log.warning("discord account %s: %s; retrying", account.status.account_id, reason)
        self._update(account, connected=False, error=reason)

    def _connection(self, account: _Account, connected: bool, reason: str | None) -> None:
        if connected:
            account.failures = 0
            if not account.status.connected:
                log.info("discord account %s connected", account.status.account_id)
            self._authenticated(account)
            self._update(account, connected=True, error=None)
            return
        error = mask(reason or "connection to Discord lost")
        if account.status.connected:
            log.warning("discord account %s: %s", account.status.account_id, error)
        self._update(account, connected=False, error=error)

    def _authenticated(self, account: _Account) -> None:
        gateway = account.gateway
        account.status.extra = {
            k: v for k, v in (("botId", gateway.bot_user_id), ("botName", gateway.bot_name)) if v
        }
        self._update(account, authenticated=True)

    def _backoff(self, failures: int) -> float:
        """Jittered exponential backoff from one second: half fixed, half random, capped."""
        ceiling = min(self._max_backoff, 2.0 ** min(failures - 1, 16))
        return ceiling / 2 + self._rng.uniform(0, ceiling / 2)

    # -- receiving -----------------------------------------------------------------------

    async def _receive(self, account: _Account, message: DiscordMessage) -> None:
        bot_id = account.gateway.bot_user_id
        if message.author.id == bot_id or message.author.bot:
            return  # our own posts, and other bots (two bots must not talk in a loop)
        if not message.content and not message.attachments:
            return
        inbound = await self._inbound(account, message)
        account.status.last_activity = self._now_ms()
        for attempt in range(1, HANDOVER_ATTEMPTS + 1):
            try:
                await account.sink.inbound(inbound)
                return
            except Exception as exc:
                if attempt == HANDOVER_ATTEMPTS:
                    log.error(
                        "discord message %s lost: not handed over after %d attempts: %s",
                        message.id, attempt, _reason(exc),
                    )  # fmt: skip
                    return
                log.warning("discord message %s not handed over: %s", message.id, _reason(exc))
                await self._sleep(self._backoff(attempt))

    async def _press(self, account: _Account, press: DiscordPress) -> str | None:
        """A button press, handed to the sink; its answer goes back to the presser. A
        failure is told to them: pressing again is the retry."""
        if press.user.bot:
            return None
        if press.kind == "dm":
            peer = Peer("dm", press.channel_id, press.user.name, press.user.handle)
        else:
            thread = press.channel_id if press.kind == "thread" else None
            peer = Peer(press.kind, press.channel_id, press.channel_name, thread_id=thread)
        event = ActionEvent(
            channel=self.name,
            account_id=account.status.account_id,
            peer=peer,
            sender=Sender(press.user.id, press.user.name, press.user.handle),
            action_id=press.custom_id,
            message_id=press.message_id,
        )
        account.status.last_activity = self._now_ms()
        try:
            return await account.sink.action(event)
        except Exception as exc:
            log.error("discord button press not handled: %s", _reason(exc))
            return "Something went wrong; try again."

    async def _inbound(self, account: _Account, message: DiscordMessage) -> InboundMessage:
        bot_id = account.gateway.bot_user_id
        media, notes = await self._download_all(account.gateway, message.attachments)
        reply_to_bot = bool(bot_id) and message.reply_to_author_id == bot_id
        mentioned = bool(bot_id) and bot_id in message.mention_ids
        author = message.author
        return InboundMessage(
            channel=self.name,
            account_id=account.status.account_id,
            peer=_peer(message),
            sender=Sender(author.id, author.name, author.handle),
            message_id=message.id,
            text="\n".join(part for part in (message.content, *notes) if part),
            timestamp=message.timestamp_ms,
            reply_to_id=message.reply_to_id,
            reply_to_text=message.reply_to_text,
            reply_to_bot=reply_to_bot,
            media=tuple(media),
            was_mentioned=mentioned or reply_to_bot,
            mentioned_ids=message.mention_ids,
        )

    async def _download_all(
        self, gateway: DiscordGateway, attachments: tuple[DiscordAttachment, ...]
    ) -> tuple[list[Media], list[str]]:
        media: list[Media] = []
        notes: list[str] = []
        for attachment in attachments:
            result = await self._download(gateway, attachment)
            if isinstance(result, Media):
                media.append(result)
            else:
                notes.append(result)
        return media, notes

    async def _download(
        self, gateway: DiscordGateway, attachment: DiscordAttachment
    ) -> Media | str:
        """The attachment as inline base64 Media, or a note for the text saying why not."""
        label, limit = attachment.filename, self._max_attachment
        if attachment.size > limit:
            return _too_big(label, attachment.size, limit)
        try:
            data = await gateway.fetch_attachment(attachment.url, limit)
        except Exception as exc:
            log.warning("discord attachment %s not downloaded: %s", label, _reason(exc))
            return f"[attachment not downloaded: {label}]"
        if len(data) > limit:
            return _too_big(label, len(data), limit)
        mime = attachment.content_type or "application/octet-stream"
        return Media(
            type=_kind_of(mime),
            mime_type=mime,
            data=base64.b64encode(data).decode("ascii"),
            filename=attachment.filename,
            size=len(data),
            duration=attachment.duration,
        )

    # -- sending -------------------------------------------------------------------------

    async def send(self, account_id: str, message: OutboundMessage) -> str | None:
        """Send text in pieces of at most 2,000 characters (the outbox has usually split
        already); the first answers `reply_to_id`. Returns the last message id."""
        account = self._running(account_id)
        peer = message.peer
        sent: str | None = None
        pieces = split_text(message.text, MAX_TEXT)
        for index, piece in enumerate(pieces):
            reply_to = message.reply_to_id if index == 0 else None
            actions = message.actions if index == len(pieces) - 1 else ()
            try:
                sent = await account.gateway.send(peer.id, piece, reply_to, peer.thread_id, actions)
            except GsvError as exc:
                raise type(exc)(mask(exc.message), details=exc.details) from None
            except Exception as exc:
                raise Unavailable(f"discord send failed: {_reason(exc)}") from None
            account.status.last_activity = self._now_ms()
        return sent

    async def edit(self, account_id: str, peer: Peer, message_id: str, text: str) -> None:
        """Replace a sent message's text and remove its buttons."""
        account = self._running(account_id)
        try:
            await account.gateway.edit(peer.thread_id or peer.id, message_id, text[:MAX_TEXT])
        except GsvError as exc:
            raise type(exc)(mask(exc.message), details=exc.details) from None
        except Exception as exc:
            raise Unavailable(f"discord edit failed: {_reason(exc)}") from None

    async def set_typing(self, account_id: str, peer: Peer, typing: bool) -> None:
        """Show "typing..." (Discord clears it after ten seconds or on the next message).
        A courtesy: failures are logged, never raised."""
        account = self._accounts.get(account_id)
        if not typing or account is None:
            return
        try:
            await account.gateway.typing(peer.thread_id or peer.id)
        except Exception as exc:
            log.info("discord typing in %s failed: %s", peer.id, _reason(exc))

    # -- helpers -------------------------------------------------------------------------

    def _running(self, account_id: str) -> _Account:
        account = self._accounts.get(account_id)
        if account is None:
            raise Unavailable(f"discord account '{account_id}' is not running")
        return account

    def _update(self, account: _Account, **changes: Any) -> None:
        """Change the account's status; tell the sink when something changed."""
        status = account.status
        if all(getattr(status, key) == value for key, value in changes.items()):
            return
        for key, value in changes.items():
            setattr(status, key, value)
        try:
            account.sink.status_changed(self.name, replace(status, extra=dict(status.extra)))
        except Exception:
            log.exception("discord status callback failed")

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)


# -- pure conversion ---------------------------------------------------------------------


def _peer(message: DiscordMessage) -> Peer:
    if message.kind == "dm":
        return Peer("dm", message.channel_id, message.author.name, message.author.handle)
    thread = message.channel_id if message.kind == "thread" else None
    return Peer(message.kind, message.channel_id, message.channel_name, thread_id=thread)


def _kind_of(mime: str) -> str:
    top = mime.split("/", 1)[0]
    return {"image": "image", "audio": "audio", "video": "video"}.get(top, "document")


def _too_big(label: str, size: int, limit: int) -> str:
    return (
        f"[attachment skipped: {label} is {size / 1_048_576:.1f} MB, "
        f"over the {limit / 1_048_576:g} MB limit]"
    )


def _token(config: dict[str, Any], account_id: str) -> str:
    token = config.get("botToken")
    if not isinstance(token, str) or not token.strip():
        raise InvalidParams(
            "discord needs a bot token: create a bot in the Discord Developer Portal, then "
            f"`gsv config set {_token_key(account_id)} <token>` "
            "(`gsv channels login discord` explains the steps)"
        )
    return token.strip()


def _token_key(account_id: str) -> str:
    if account_id in ("", "default"):
        return "channels.discord.botToken"
    return f"channels.discord.accounts.{account_id}.botToken"
