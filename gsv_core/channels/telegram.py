"""The Telegram adapter: bot accounts over the Bot API with python-telegram-bot's `Bot`,
long polling in a task this module owns (one per account, cancelled by `stop`).

Receiving is at least once: an update's offset is confirmed to Telegram only after
`sink.inbound()` returned (the sink stores the message durably first), so a crash in
between means Telegram hands the update over again and the journal drops the duplicate.
Network loss, server errors and flood limits are ridden out with jittered exponential
backoff; a rejected token stops the account with a clear status.

Buttons are an inline keyboard under the message; a press arrives as a `callback_query`
update, goes to `sink.action()`, and is answered with `answerCallbackQuery` carrying the
sink's answer. A press is never redelivered: pressing again is the retry.

The bot token is a secret and it is part of every Bot API URL: it is registered with a
logging filter that masks it in the records of this module, PTB and httpx, and every
message built from a library exception is masked too.

python-telegram-bot is imported when an account starts, not with this module.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import random
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from gsv_core.channels.base import (
    AccountStatus,
    Action,
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
from gsv_core.channels.telegram_format import MAX_TEXT, format_html, split_text
from gsv_core.errors import (
    Forbidden,
    GsvError,
    InvalidParams,
    RateLimited,
    TimedOut,
    Unauthorized,
    Unavailable,
)

if TYPE_CHECKING:
    from telegram import Bot, CallbackQuery, InlineKeyboardMarkup, Message, Update

# PTB 22 warns on every time-period attribute (RetryAfter.retry_after, Voice.duration)
# unless its v23 behaviour (timedelta values) is chosen; choose it, and accept both types.
os.environ.setdefault("PTB_TIMEDELTA", "true")

log = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_API = "https://api.telegram.org"
DEFAULT_POLL_TIMEOUT = 30  # seconds; Telegram allows up to 50
MAX_MEDIA_BYTES = 20 * 1024 * 1024  # the Bot API's own download limit
MAX_RETRY_AFTER = 30.0  # a longer flood wait fails the send instead of stalling the reply
RATE_RETRIES = 3
MAX_DELIVERY_ATTEMPTS = 8  # then a poison update is logged and skipped
CONFIRM_TIMEOUT = 2.0
ALLOWED_UPDATES = ("message", "channel_post", "callback_query")
TOKEN_REJECTED = "telegram rejected the bot token"
_PEER_KINDS = {"private": "dm", "group": "group", "supergroup": "group", "channel": "channel"}
_MENTION_TYPES: list[str | None] = ["mention", "text_mention"]

# -- keeping the token out of logs -------------------------------------------------------

_SECRETS: set[str] = set()
_LIBRARY_LOGGERS = (
    "httpx",
    "telegram",
    "telegram.Bot",
    "telegram.request.BaseRequest",
    "telegram.request.HTTPXRequest",
    __name__,
)


def mask(text: str) -> str:
    """`text` with every registered bot token's secret part replaced."""
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
    # the part after the colon is the secret; the bot id before it is public
    _SECRETS.add(token.partition(":")[2] or token)
    for name in _LIBRARY_LOGGERS:
        logging.getLogger(name).addFilter(_REDACTOR)  # idempotent


def _reason(exc: BaseException) -> str:
    text = mask(str(exc)).strip() or type(exc).__name__
    return text[:200]


# -- configuration and per-account state -------------------------------------------------


@dataclass(frozen=True)
class _Settings:
    token: str
    api_base: str
    poll_timeout: int


def _settings(config: dict[str, Any]) -> _Settings:
    token = config.get("botToken")
    if not isinstance(token, str) or not token.strip():
        raise InvalidParams(
            "telegram needs a bot token: create a bot with @BotFather, then "
            "`gsv config set channels.telegram.botToken <token>`"
        )
    base = config.get("apiBaseUrl") or DEFAULT_API
    if not isinstance(base, str) or not re.match(r"https?://", base):
        raise InvalidParams(f"channels.telegram.apiBaseUrl must be an http(s) URL, not {base!r}")
    try:
        poll = int(config.get("pollTimeout", DEFAULT_POLL_TIMEOUT))
    except (TypeError, ValueError):
        raise InvalidParams("channels.telegram.pollTimeout must be a number of seconds") from None
    if not 1 <= poll <= 50:
        raise InvalidParams("channels.telegram.pollTimeout must be between 1 and 50 seconds")
    return _Settings(token.strip(), base.rstrip("/"), poll)


@dataclass
class _Account:
    status: AccountStatus
    sink: ChannelSink
    bot: Bot
    poll_timeout: int
    bot_id: int = 0
    username: str = ""
    offset: int | None = None  # the next update to ask for
    confirmed: int | None = None  # the offset Telegram last saw (it forgets what is below)
    attempts: dict[int, int] = field(default_factory=dict)  # update id -> failed hand-overs
    task: asyncio.Task[None] | None = None


@dataclass(frozen=True)
class _Attachment:
    type: str
    file_id: str
    mime_type: str
    filename: str | None = None
    size: int | None = None
    duration: float | None = None


class TelegramChannel:
    """Telegram bots (one per account id), receiving by long polling."""

    name = "telegram"
    capabilities = Capabilities(
        chat_types=("dm", "group", "channel", "thread"),
        media=True,
        typing=True,
        threads=True,
        buttons=True,
        max_text=MAX_TEXT,
    )

    def __init__(
        self,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
        min_backoff: float = 1.0,
        max_backoff: float = 30.0,
    ) -> None:
        self._sleep = sleep
        self._clock = clock
        self._rng = rng or random.Random()
        self._min_backoff = min_backoff
        self._max_backoff = max_backoff
        self._accounts: dict[str, _Account] = {}
        self._statuses: dict[str, AccountStatus] = {}

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self, account_id: str, config: dict[str, Any], sink: ChannelSink) -> None:
        """Validate the token with getMe, then poll in the background. A network failure
        here is not fatal: the account keeps trying (the gateway may boot before the
        network does) and its status says why it is not connected."""
        from telegram import Bot

        settings = _settings(config)
        await self.stop(account_id)
        _protect(settings.token)
        status = AccountStatus(account_id, mode="polling")
        self._statuses[account_id] = status
        bot = Bot(
            settings.token,
            base_url=f"{settings.api_base}/bot",
            base_file_url=f"{settings.api_base}/file/bot",
        )
        account = _Account(status, sink, bot, settings.poll_timeout)
        try:
            connected = await self._connect(account)
        except BaseException:
            await bot.shutdown()
            raise
        self._accounts[account_id] = account
        account.task = asyncio.create_task(
            self._run(account, connected), name=f"telegram:{account_id}"
        )

    async def stop(self, account_id: str) -> None:
        """End polling, confirm the handled updates, close the HTTP clients."""
        account = self._accounts.pop(account_id, None)
        if account is None:
            return
        if account.task is not None:
            account.task.cancel()
            await asyncio.wait([account.task])  # our own cancellation still propagates
        await self._confirm(account)
        await account.bot.shutdown()
        self._update(account, connected=False)
        log.info("telegram account %s stopped", account_id)

    def status(self, account_id: str | None = None) -> list[AccountStatus]:
        if account_id is None:
            return [replace(s, extra=dict(s.extra)) for s in self._statuses.values()]
        found = self._statuses.get(account_id)
        return [replace(found, extra=dict(found.extra))] if found else []

    async def login(self, account_id: str, force: bool) -> LoginResult:
        account = self._accounts.get(account_id)
        if account is not None and account.status.connected and not force:
            return LoginResult(f"Telegram bot @{account.username} is connected.")
        start = "gsv channels start telegram" + (
            "" if _is_default(account_id) else f" {account_id}"
        )
        return LoginResult(
            "Telegram has no QR login: a bot signs in with its token.\n"
            "1. In Telegram, open @BotFather and send /newbot (or /token for an existing bot).\n"
            f"2. gsv config set {_token_key(account_id)} <the token BotFather gave you>\n"
            f"3. {start}"
        )

    async def logout(self, account_id: str) -> None:
        await self.stop(account_id)
        log.info(
            "telegram account %s logged out; its token stays in config (%s)",
            account_id,
            _token_key(account_id),
        )

    # -- connecting and polling ----------------------------------------------------------

    async def _connect(self, account: _Account) -> bool:
        """getMe and deleteWebhook (polling is refused while a webhook is set). False when
        Telegram could not be reached; raises when it refused us."""
        from telegram import error as tg

        try:
            await account.bot.initialize()
            await account.bot.delete_webhook()
        except tg.InvalidToken:
            self._update(account, connected=False, authenticated=False, error=TOKEN_REJECTED)
            raise Unauthorized(f"{TOKEN_REJECTED} (check channels.telegram.botToken)") from None
        except (tg.NetworkError, tg.RetryAfter) as exc:
            if isinstance(exc, tg.BadRequest):
                raise _api_error(exc) from None
            self._update(account, connected=False, error=f"telegram unreachable: {_reason(exc)}")
            log.warning(
                "telegram account %s: %s; retrying", account.status.account_id, account.status.error
            )
            return False
        except tg.TelegramError as exc:
            self._update(account, connected=False, error=_reason(exc))
            raise _api_error(exc) from None
        me = account.bot.bot
        account.bot_id, account.username = me.id, me.username or ""
        account.status.extra = {"botId": str(me.id), "botUsername": me.username}
        self._update(account, connected=True, authenticated=True, error=None)
        log.info("telegram account %s connected as @%s", account.status.account_id, me.username)
        return True

    async def _run(self, account: _Account, connected: bool) -> None:
        failures = 0
        while not connected:
            failures += 1
            await self._sleep(self._backoff(failures))
            try:
                connected = await self._connect(account)
            except GsvError as exc:
                log.error("telegram account %s stopped: %s", account.status.account_id, exc)
                return
        await self._poll(account)

    async def _poll(self, account: _Account) -> None:
        from telegram import error as tg

        failures = 0
        while True:
            offset = account.offset
            try:
                updates = await account.bot.get_updates(
                    offset=offset, timeout=account.poll_timeout, allowed_updates=ALLOWED_UPDATES
                )
            except tg.InvalidToken:
                log.error(
                    "telegram account %s: %s; polling stopped",
                    account.status.account_id,
                    TOKEN_REJECTED,
                )
                self._update(account, connected=False, authenticated=False, error=TOKEN_REJECTED)
                return
            except tg.RetryAfter as exc:
                await self._sleep(min(_seconds(exc.retry_after) or 1.0, self._max_backoff))
                continue
            except Exception as exc:  # network loss, 5xx, 409, or a malformed answer
                failures += 1
                self._lost(account, exc)
                await self._sleep(self._backoff(failures))
                continue
            account.confirmed = offset
            if failures:
                log.info("telegram account %s reconnected", account.status.account_id)
                failures = 0
            self._update(account, connected=True, error=None)
            attempts = await self._deliver_all(account, updates)
            if attempts:
                await self._sleep(self._backoff(attempts))

    def _lost(self, account: _Account, exc: Exception) -> None:
        from telegram import error as tg

        if isinstance(exc, tg.Conflict):
            reason = "another client is polling this bot (or a webhook is set)"
        elif isinstance(exc, tg.TelegramError):
            reason = f"telegram unreachable: {_reason(exc)}"
        else:
            reason = f"telegram polling failed: {_reason(exc)}"
        if account.status.connected:
            log.warning("telegram account %s: %s", account.status.account_id, reason)
        self._update(account, connected=False, error=reason)

    def _backoff(self, failures: int) -> float:
        """Jittered exponential backoff: half fixed, half random, capped."""
        ceiling = min(self._max_backoff, self._min_backoff * 2.0 ** min(failures - 1, 16))
        return ceiling / 2 + self._rng.uniform(0, ceiling / 2)

    async def _confirm(self, account: _Account) -> None:
        """Tell Telegram which updates were handed over, so a restart does not redeliver
        them (the journal would drop the duplicates anyway)."""
        from telegram import error as tg

        if account.offset is None or account.offset == account.confirmed:
            return
        try:
            async with asyncio.timeout(CONFIRM_TIMEOUT):
                await account.bot.get_updates(
                    offset=account.offset, limit=1, timeout=0, allowed_updates=ALLOWED_UPDATES
                )
        except (tg.TelegramError, TimeoutError) as exc:
            log.info(
                "telegram could not confirm updates before %s (%s); they will come again",
                account.offset,
                _reason(exc),
            )

    # -- receiving -----------------------------------------------------------------------

    async def _deliver_all(self, account: _Account, updates: tuple[Update, ...]) -> int:
        """Hand updates over in order, advancing the offset past each one the sink took.
        Returns the failed attempts of the update that stopped the batch (0: all done)."""
        for update in updates:
            try:
                await self._deliver(account, update)
            except Exception as exc:
                attempts = account.attempts.get(update.update_id, 0) + 1
                if attempts < MAX_DELIVERY_ATTEMPTS:
                    account.attempts[update.update_id] = attempts
                    log.warning(
                        "telegram update %s not handed over (attempt %d): %s",
                        update.update_id,
                        attempts,
                        _reason(exc),
                    )
                    return attempts
                log.error(
                    "telegram update %s skipped after %d failed hand-overs",
                    update.update_id,
                    attempts,
                    exc_info=exc,
                )
            account.attempts.pop(update.update_id, None)
            account.offset = update.update_id + 1
        return 0

    async def _deliver(self, account: _Account, update: Update) -> None:
        if update.callback_query is not None:
            await self._press(account, update.callback_query)
            return
        message = update.message or update.channel_post
        if message is None:
            return  # edits and other update kinds are not conversation
        inbound = await self._inbound(account, message)
        if inbound is None:
            return
        account.status.last_activity = self._now_ms()
        await account.sink.inbound(inbound)

    async def _press(self, account: _Account, query: CallbackQuery) -> None:
        """A button pressed: hand it to the sink, then answer the press (Telegram shows
        the answer as a toast and stops the button's spinner)."""
        from telegram import Message
        from telegram import error as tg

        answer: str | None = None
        message = query.message
        if query.data and message is not None:
            user = query.from_user
            # a message older than 48 hours comes as an InaccessibleMessage: chat only
            peer = _peer(message) if isinstance(message, Message) else _chat_peer(message)
            event = ActionEvent(
                channel=self.name,
                account_id=account.status.account_id,
                peer=peer,
                sender=Sender(str(user.id), user.full_name, user.username),
                action_id=query.data,
                message_id=str(message.message_id),
            )
            account.status.last_activity = self._now_ms()
            try:
                answer = await account.sink.action(event)
            except Exception:  # the press is lost, not the poll loop: pressing again retries
                log.exception("telegram button press %s not handled", query.id)
                answer = "Something went wrong; try again."
        try:
            await account.bot.answer_callback_query(query.id, text=answer)
        except tg.TelegramError as exc:
            log.info("telegram could not answer button press %s: %s", query.id, _reason(exc))

    async def _inbound(self, account: _Account, message: Message) -> InboundMessage | None:
        attachments = _attachments(message)
        text = message.text or message.caption or ""
        if not text and not attachments:
            return None  # joins, pins, topic creation and other service messages
        text, addressed = _strip_command_suffix(text, account.username)
        mentioned, mentioned_ids = _mentions(message, account.bot_id, account.username)
        reply = _real_reply(message)
        reply_to_bot = bool(reply and reply.from_user and reply.from_user.id == account.bot_id)
        media, notes = await self._download_all(account.bot, attachments)
        return InboundMessage(
            channel=self.name,
            account_id=account.status.account_id,
            peer=_peer(message),
            sender=_sender(message),
            message_id=str(message.message_id),
            text="\n".join(part for part in (text, *notes) if part),
            timestamp=int(message.date.timestamp() * 1000),
            reply_to_id=str(reply.message_id) if reply else None,
            reply_to_text=(reply.text or reply.caption) if reply else None,
            reply_to_bot=reply_to_bot,
            media=tuple(media),
            was_mentioned=mentioned or addressed or reply_to_bot,
            mentioned_ids=mentioned_ids,
        )

    async def _download_all(
        self, bot: Bot, attachments: list[_Attachment]
    ) -> tuple[list[Media], list[str]]:
        media: list[Media] = []
        notes: list[str] = []
        for attachment in attachments:
            result = await _download(bot, attachment)
            if isinstance(result, Media):
                media.append(result)
            else:
                notes.append(result)
        return media, notes

    # -- sending -------------------------------------------------------------------------

    async def send(self, account_id: str, message: OutboundMessage) -> str | None:
        """Send text (split past the limit, HTML-formatted); returns the last message id."""
        account = self._running(account_id)
        chat_id = _chat_id(message.peer.id)
        thread_id = _int_or_none(message.peer.thread_id)
        reply_to = _int_or_none(message.reply_to_id)
        sent: str | None = None
        chunks = split_text(message.text)
        for index, chunk in enumerate(chunks):
            first_reply = reply_to if index == 0 else None
            keyboard = _keyboard(message.actions) if index == len(chunks) - 1 else None
            sent = await self._send_chunk(account, chat_id, thread_id, chunk, first_reply, keyboard)
        return sent

    async def edit(self, account_id: str, peer: Peer, message_id: str, text: str) -> None:
        """Replace a sent message's text; leaving out reply_markup drops its keyboard."""
        from telegram import error as tg

        account = self._running(account_id)
        chat_id, target = _chat_id(peer.id), int(message_id)

        async def attempt(body: str, parse_mode: str | None) -> object:
            return await self._rate_limited(
                lambda: account.bot.edit_message_text(
                    body, chat_id=chat_id, message_id=target, parse_mode=parse_mode
                )
            )

        try:
            try:
                await attempt(format_html(text), "HTML")
            except tg.BadRequest as exc:
                if "can't parse entities" not in str(exc).lower():
                    raise
                await attempt(text, None)
        except tg.BadRequest as exc:
            if "not modified" in str(exc).lower():
                return  # already says this
            raise _api_error(exc) from None
        except tg.TelegramError as exc:
            raise _api_error(exc) from None

    async def _send_chunk(
        self,
        account: _Account,
        chat_id: int | str,
        thread_id: int | None,
        text: str,
        reply_to: int | None,
        keyboard: InlineKeyboardMarkup | None = None,
    ) -> str:
        from telegram import ReplyParameters
        from telegram import error as tg

        reply = (
            ReplyParameters(reply_to, allow_sending_without_reply=True)
            if reply_to is not None
            else None
        )

        async def attempt(body: str, parse_mode: str | None) -> Message:
            return await self._rate_limited(
                lambda: account.bot.send_message(
                    chat_id,
                    body,
                    parse_mode=parse_mode,
                    message_thread_id=thread_id,
                    reply_parameters=reply,
                    reply_markup=keyboard,
                )
            )

        try:
            try:
                sent = await attempt(format_html(text), "HTML")
            except tg.BadRequest as exc:
                if "can't parse entities" not in str(exc).lower():
                    raise
                log.info("telegram refused the formatting (%s); sending plain text", _reason(exc))
                sent = await attempt(text, None)
        except tg.TelegramError as exc:
            raise _api_error(exc) from None
        account.status.last_activity = self._now_ms()
        return str(sent.message_id)

    async def _rate_limited(self, request: Callable[[], Awaitable[T]]) -> T:
        """Run a Bot API call, waiting out flood limits up to MAX_RETRY_AFTER."""
        from telegram import error as tg

        for _ in range(RATE_RETRIES):
            try:
                return await request()
            except tg.RetryAfter as exc:
                wait = _seconds(exc.retry_after) or 1.0
                if wait > MAX_RETRY_AFTER:
                    raise _api_error(exc) from None
                log.info("telegram flood limit: waiting %g s", wait)
                await self._sleep(wait)
        return await request()

    async def set_typing(self, account_id: str, peer: Peer, typing: bool) -> None:
        """Show "typing..." (Telegram clears it by itself after a few seconds or on the
        next message). A courtesy: failures are logged, never raised."""
        from telegram import error as tg

        account = self._accounts.get(account_id)
        if not typing or account is None:
            return
        try:
            await account.bot.send_chat_action(
                _chat_id(peer.id), "typing", message_thread_id=_int_or_none(peer.thread_id)
            )
        except tg.TelegramError as exc:
            log.info("telegram typing for chat %s failed: %s", peer.id, _reason(exc))

    # -- helpers -------------------------------------------------------------------------

    def _running(self, account_id: str) -> _Account:
        account = self._accounts.get(account_id)
        if account is None:
            raise Unavailable(f"telegram account '{account_id}' is not running")
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
            log.exception("telegram status callback failed")

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)


# -- pure conversion of Telegram objects -------------------------------------------------


def _peer(message: Message) -> Peer:
    chat = message.chat
    thread = message.message_thread_id if message.is_topic_message else None
    return Peer(
        kind=_PEER_KINDS.get(chat.type, "group"),
        id=str(chat.id),
        name=chat.effective_name,
        handle=chat.username,
        thread_id=str(thread) if thread else None,
    )


def _chat_peer(message: Any) -> Peer:
    """The peer of a message Telegram no longer shows the bot (only its chat is known)."""
    chat = message.chat
    return Peer(_PEER_KINDS.get(chat.type, "group"), str(chat.id), chat.effective_name,
                chat.username)  # fmt: skip


def _keyboard(actions: tuple[Action, ...]) -> InlineKeyboardMarkup | None:
    """One row of inline buttons; each press comes back with the action's id."""
    if not actions:
        return None
    from telegram import InlineKeyboardButton, InlineKeyboardMarkup

    styles = {"primary": "success", "danger": "danger"}
    return InlineKeyboardMarkup([[
        InlineKeyboardButton(a.label, callback_data=a.id, style=styles.get(a.style))
        for a in actions
    ]])  # fmt: skip


def _sender(message: Message) -> Sender | None:
    # anonymous admins and channel posts speak as a chat; prefer it over the stand-in user
    if message.sender_chat is not None:
        chat = message.sender_chat
        return Sender(str(chat.id), chat.effective_name, chat.username)
    if message.from_user is not None:
        user = message.from_user
        return Sender(str(user.id), user.full_name, user.username)
    return None


def _mentions(message: Message, bot_id: int, username: str) -> tuple[bool, tuple[str, ...]]:
    """Whether the bot is mentioned, and the ids of the users mentioned."""
    handle = f"@{username}".lower()
    found = {
        **message.parse_entities(_MENTION_TYPES),
        **message.parse_caption_entities(_MENTION_TYPES),
    }
    ids: list[str] = []
    for entity, value in found.items():
        if entity.type == "text_mention" and entity.user is not None:
            ids.append(str(entity.user.id))
        elif username and value.lower() == handle:
            ids.append(str(bot_id))
    text = message.text or message.caption or ""
    if username and str(bot_id) not in ids and _handle_pattern(username).search(text):
        ids.append(str(bot_id))  # a mention the client did not mark as an entity
    return str(bot_id) in ids, tuple(dict.fromkeys(ids))


def _handle_pattern(username: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w@])@{re.escape(username)}(?!\w)", re.IGNORECASE)


def _strip_command_suffix(text: str, username: str) -> tuple[str, bool]:
    """`/status@mybot args` -> (`/status args`, True): Telegram's way of addressing a
    command to one bot in a group."""
    if not username:
        return text, False
    match = re.match(rf"(/\w+)@{re.escape(username)}(?!\w)", text, re.IGNORECASE)
    if match is None:
        return text, False
    return match.group(1) + text[match.end() :], True


def _real_reply(message: Message) -> Message | None:
    reply = message.reply_to_message
    if reply is None:
        return None
    # in a forum topic every message "replies" to the topic's opening service message
    if reply.forum_topic_created is not None or (
        message.is_topic_message and reply.message_id == message.message_thread_id
    ):
        return None
    return reply


def _attachments(message: Message) -> list[_Attachment]:
    found: list[_Attachment] = []
    if message.photo:
        best = max(message.photo, key=lambda p: (p.width * p.height, p.file_size or 0))
        found.append(_Attachment("image", best.file_id, "image/jpeg", size=best.file_size))
    for kind, media, default_mime in (
        ("audio", message.voice, "audio/ogg"),
        ("audio", message.audio, "audio/mpeg"),
        ("video", message.video, "video/mp4"),
    ):
        if media is not None:
            found.append(
                _Attachment(
                    kind,
                    media.file_id,
                    media.mime_type or default_mime,
                    getattr(media, "file_name", None),
                    media.file_size,
                    _seconds(media.duration),
                )
            )
    document = message.document
    if document is not None and message.animation is None:
        mime = document.mime_type or "application/octet-stream"
        found.append(
            _Attachment(
                _kind_of(mime), document.file_id, mime, document.file_name, document.file_size
            )
        )
    return found


def _kind_of(mime: str) -> str:
    top = mime.split("/", 1)[0]
    return {"image": "image", "audio": "audio", "video": "video"}.get(top, "document")


async def _download(bot: Bot, attachment: _Attachment) -> Media | str:
    """The attachment as inline base64 Media, or a note for the text saying why not."""
    from telegram import error as tg

    label = attachment.filename or attachment.type
    if attachment.size is not None and attachment.size > MAX_MEDIA_BYTES:
        return _too_big(label, attachment.size)
    try:
        file = await bot.get_file(attachment.file_id)
        if file.file_size is not None and file.file_size > MAX_MEDIA_BYTES:
            return _too_big(label, file.file_size)
        data = bytes(await file.download_as_bytearray())
    except tg.TelegramError as exc:
        log.warning("telegram attachment %s not downloaded: %s", label, _reason(exc))
        return f"[attachment not downloaded: {label}]"
    if len(data) > MAX_MEDIA_BYTES:
        return _too_big(label, len(data))
    return Media(
        type=attachment.type,
        mime_type=attachment.mime_type,
        data=base64.b64encode(data).decode("ascii"),
        filename=attachment.filename,
        size=len(data),
        duration=attachment.duration,
    )


def _too_big(label: str, size: int) -> str:
    return f"[attachment skipped: {label} is {size / 1_048_576:.1f} MB, over the 20 MB limit]"


def _api_error(exc: Exception) -> GsvError:
    """The gsv error for a Bot API failure (messages masked)."""
    from telegram import error as tg

    reason = _reason(exc)
    if isinstance(exc, tg.RetryAfter):
        wait = _seconds(exc.retry_after) or 0.0
        return RateLimited(
            f"telegram rate limit: retry after {wait:g} s", details={"retryAfter": wait}
        )
    if isinstance(exc, tg.InvalidToken):
        return Unauthorized(TOKEN_REJECTED)
    if isinstance(exc, tg.Forbidden):
        return Forbidden(f"telegram refused: {reason}")
    if isinstance(exc, tg.ChatMigrated):
        return InvalidParams(f"the telegram group moved to chat {exc.new_chat_id}")
    if isinstance(exc, tg.BadRequest):
        return InvalidParams(f"telegram rejected the request: {reason}")
    if isinstance(exc, tg.TimedOut):
        return TimedOut("telegram did not answer in time")
    if isinstance(exc, tg.NetworkError):
        return Unavailable(f"telegram unreachable: {reason}")
    return GsvError(f"telegram error: {reason}")


def _seconds(value: int | float | timedelta | None) -> float | None:
    if value is None:
        return None
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


def _chat_id(peer_id: str) -> int | str:
    return int(peer_id) if re.fullmatch(r"-?\d+", peer_id) else peer_id  # or "@channelname"


def _int_or_none(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() else None


def _is_default(account_id: str) -> bool:
    return account_id in ("", "default")


def _token_key(account_id: str) -> str:
    if _is_default(account_id):
        return "channels.telegram.botToken"
    return f"channels.telegram.accounts.{account_id}.botToken"
