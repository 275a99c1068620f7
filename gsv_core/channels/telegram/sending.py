"""Sending to Telegram: text split past the limit and sent as HTML (plain text when
Telegram refuses the formatting), edits, inline keyboards for buttons, typing, and
waiting out flood limits. Messages and edits carry `link_preview_options` with
`is_disabled` unless the owner turned link previews on (`OutboundMessage.link_previews`)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from collections.abc import Callable
from typing import TYPE_CHECKING
from typing import TypeVar

from gsv_core.channels.accounts import AccountAdapter
from gsv_core.channels.base import Action
from gsv_core.channels.base import MessageEdit
from gsv_core.channels.base import OutboundMessage
from gsv_core.channels.base import Peer
from gsv_core.channels.telegram.account import Account
from gsv_core.channels.telegram.account import api_error
from gsv_core.channels.telegram.account import masked_reason
from gsv_core.channels.telegram.account import seconds
from gsv_core.channels.telegram.conversion import parse_chat_id
from gsv_core.channels.telegram.conversion import parse_int
from gsv_core.channels.telegram.formatting import format_html
from gsv_core.channels.telegram.formatting import split_text

if TYPE_CHECKING:
    from telegram import InlineKeyboardMarkup
    from telegram import LinkPreviewOptions
    from telegram import Message

log = logging.getLogger(__name__)
T = TypeVar("T")

MAX_RETRY_AFTER = 30.0  # a longer flood wait fails the send instead of stalling the reply
RATE_RETRIES = 3


class TelegramSending(AccountAdapter[Account]):
    """Sending, editing and typing for `TelegramChannel`."""

    async def send(self, account_id: str, message: OutboundMessage) -> str | None:
        """Send text (split past the limit, HTML-formatted); returns the last message id."""
        account = self._running(account_id)
        reply_to = parse_int(message.reply_to_id)
        sent: str | None = None
        previews = preview_options(message.link_previews)
        chunks = split_text(message.text)
        for index, chunk in enumerate(chunks):
            first_reply = reply_to if index == 0 else None
            keyboard = keyboard_of(message.actions) if index == len(chunks) - 1 else None
            sent = await self._send_chunk(
                account, message.peer, chunk, first_reply, keyboard, previews
            )
        return sent

    async def edit(self, edit: MessageEdit) -> None:
        """Replace a sent message's text; leaving out reply_markup drops its keyboard."""
        from telegram import error as tg

        account = self._running(edit.account_id)
        chat_id, target = parse_chat_id(edit.peer.id), int(edit.message_id)
        previews = preview_options(edit.link_previews)

        async def attempt(body: str, parse_mode: str | None) -> object:
            return await self._rate_limited(
                lambda: account.bot.edit_message_text(
                    body, chat_id=chat_id, message_id=target, parse_mode=parse_mode,
                    link_preview_options=previews,
                )
            )  # fmt: skip

        try:
            try:
                await attempt(format_html(edit.text), "HTML")
            except tg.BadRequest as exc:
                if "can't parse entities" not in str(exc).lower():
                    raise
                await attempt(edit.text, None)
        except tg.BadRequest as exc:
            if "not modified" in str(exc).lower():
                return  # already says this
            raise api_error(exc) from None
        except tg.TelegramError as exc:
            raise api_error(exc) from None

    async def _send_chunk(
        self,
        account: Account,
        peer: Peer,
        text: str,
        reply_to: int | None,
        keyboard: InlineKeyboardMarkup | None = None,
        previews: LinkPreviewOptions | None = None,
    ) -> str:
        from telegram import ReplyParameters
        from telegram import error as tg

        chat_id, thread_id = parse_chat_id(peer.id), parse_int(peer.thread_id)
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
                    link_preview_options=previews,
                )
            )

        try:
            try:
                sent = await attempt(format_html(text), "HTML")
            except tg.BadRequest as exc:
                if "can't parse entities" not in str(exc).lower():
                    raise
                log.info(
                    "telegram refused the formatting (%s); sending plain text", masked_reason(exc)
                )
                sent = await attempt(text, None)
        except tg.TelegramError as exc:
            raise api_error(exc) from None
        account.status.last_activity = self._now_ms()
        return str(sent.message_id)

    async def _rate_limited(self, request: Callable[[], Awaitable[T]]) -> T:
        """Run a Bot API call, waiting out flood limits up to MAX_RETRY_AFTER."""
        from telegram import error as tg

        for _ in range(RATE_RETRIES):
            try:
                return await request()
            except tg.RetryAfter as exc:
                wait = seconds(exc.retry_after) or 1.0
                if wait > MAX_RETRY_AFTER:
                    raise api_error(exc) from None
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
                parse_chat_id(peer.id), "typing", message_thread_id=parse_int(peer.thread_id)
            )
        except tg.TelegramError as exc:
            log.info("telegram typing for chat %s failed: %s", peer.id, masked_reason(exc))


def preview_options(link_previews: bool) -> LinkPreviewOptions | None:
    """Previews off, or None: Telegram's own default (a preview of the first link)."""
    if link_previews:
        return None
    from telegram import LinkPreviewOptions

    return LinkPreviewOptions(is_disabled=True)


def keyboard_of(actions: tuple[Action, ...]) -> InlineKeyboardMarkup | None:
    """One row of inline buttons; each press comes back with the action's id."""
    if not actions:
        return None
    from telegram import InlineKeyboardButton
    from telegram import InlineKeyboardMarkup

    styles = {"primary": "success", "danger": "danger"}
    return InlineKeyboardMarkup([[
        InlineKeyboardButton(a.label, callback_data=a.id, style=styles.get(a.style))
        for a in actions
    ]])  # fmt: skip
