"""Telegram's side of an account's connection: getMe and deleteWebhook, long polling in
the account's task, and handing each update over (messages to `sink.inbound()`, button
presses to `sink.action()`).

Receiving is at least once: an update's offset is confirmed to Telegram only after
`sink.inbound()` returned (the sink stores the message durably first), so a crash in
between means Telegram hands the update over again and the journal drops the duplicate.
Network loss, server errors and flood limits are ridden out with jittered exponential
backoff; a rejected token stops the account with a clear status. A press is never
redelivered: pressing again is the retry.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from gsv_core.channels.accounts import AccountAdapter
from gsv_core.channels.base import ActionEvent
from gsv_core.channels.base import InboundMessage
from gsv_core.channels.base import Sender
from gsv_core.channels.media import sort_downloads
from gsv_core.channels.telegram.account import TOKEN_REJECTED
from gsv_core.channels.telegram.account import Account
from gsv_core.channels.telegram.account import api_error
from gsv_core.channels.telegram.account import masked_reason
from gsv_core.channels.telegram.account import seconds
from gsv_core.channels.telegram.conversion import attachments_of
from gsv_core.channels.telegram.conversion import chat_peer_of
from gsv_core.channels.telegram.conversion import download
from gsv_core.channels.telegram.conversion import find_mentions
from gsv_core.channels.telegram.conversion import peer_of
from gsv_core.channels.telegram.conversion import real_reply
from gsv_core.channels.telegram.conversion import sender_of
from gsv_core.channels.telegram.conversion import strip_command_suffix
from gsv_core.errors import GsvError
from gsv_core.errors import Unauthorized

if TYPE_CHECKING:
    from telegram import CallbackQuery
    from telegram import Message
    from telegram import Update

log = logging.getLogger(__name__)

MAX_DELIVERY_ATTEMPTS = 8  # then a poison update is logged and skipped
CONFIRM_TIMEOUT = 2.0
ALLOWED_UPDATES = ("message", "channel_post", "callback_query")


class TelegramPolling(AccountAdapter[Account]):
    """Connecting, polling and receiving for `TelegramChannel`."""

    async def _connect(self, account: Account) -> bool:
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
                raise api_error(exc) from None
            self._update(
                account, connected=False, error=f"telegram unreachable: {masked_reason(exc)}"
            )
            log.warning(
                "telegram account %s: %s; retrying", account.status.account_id, account.status.error
            )
            return False
        except tg.TelegramError as exc:
            self._update(account, connected=False, error=masked_reason(exc))
            raise api_error(exc) from None
        me = account.bot.bot
        account.bot_id, account.username = me.id, me.username or ""
        account.status.extra = {"botId": str(me.id), "botUsername": me.username}
        self._update(account, connected=True, authenticated=True, error=None)
        log.info("telegram account %s connected as @%s", account.status.account_id, me.username)
        return True

    async def _run(self, account: Account, connected: bool) -> None:
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

    async def _poll(self, account: Account) -> None:
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
                await self._sleep(min(seconds(exc.retry_after) or 1.0, self._max_backoff))
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

    def _lost(self, account: Account, exc: Exception) -> None:
        from telegram import error as tg

        if isinstance(exc, tg.Conflict):
            why = "another client is polling this bot (or a webhook is set)"
        elif isinstance(exc, tg.TelegramError):
            why = f"telegram unreachable: {masked_reason(exc)}"
        else:
            why = f"telegram polling failed: {masked_reason(exc)}"
        if account.status.connected:
            log.warning("telegram account %s: %s", account.status.account_id, why)
        self._update(account, connected=False, error=why)

    async def _confirm(self, account: Account) -> None:
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
                masked_reason(exc),
            )

    # -- receiving -----------------------------------------------------------------------

    async def _deliver_all(self, account: Account, updates: tuple[Update, ...]) -> int:
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
                        masked_reason(exc),
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

    async def _deliver(self, account: Account, update: Update) -> None:
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

    async def _press(self, account: Account, query: CallbackQuery) -> None:
        """A button pressed: hand it to the sink, then answer the press (Telegram shows
        the answer as a toast and stops the button's spinner)."""
        from telegram import Message
        from telegram import error as tg

        answer: str | None = None
        message = query.message
        if query.data and message is not None:
            user = query.from_user
            # a message older than 48 hours comes as an InaccessibleMessage: chat only
            peer = peer_of(message) if isinstance(message, Message) else chat_peer_of(message)
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
            log.info("telegram could not answer button press %s: %s", query.id, masked_reason(exc))

    async def _inbound(self, account: Account, message: Message) -> InboundMessage | None:
        attachments = attachments_of(message)
        text = message.text or message.caption or ""
        if not text and not attachments:
            return None  # joins, pins, topic creation and other service messages
        text, addressed = strip_command_suffix(text, account.username)
        mentioned, mentioned_ids = find_mentions(message, account.bot_id, account.username)
        reply = real_reply(message)
        reply_to_bot = bool(reply and reply.from_user and reply.from_user.id == account.bot_id)
        media, notes = sort_downloads([await download(account.bot, a) for a in attachments])
        return InboundMessage(
            channel=self.name,
            account_id=account.status.account_id,
            peer=peer_of(message),
            sender=sender_of(message),
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
