"""Sending to Discord: text in pieces of at most 2,000 characters (the first answering
the inbound message), buttons as message components, edits that remove them, typing.
Every piece goes out with embeds suppressed (no link previews) unless the owner turned
them on (`OutboundMessage.link_previews`)."""

from __future__ import annotations

import logging

from gsv_core.channels.accounts import AccountAdapter
from gsv_core.channels.base import MessageEdit
from gsv_core.channels.base import OutboundMessage
from gsv_core.channels.base import Peer
from gsv_core.channels.discord.account import Account
from gsv_core.channels.discord.account import mask
from gsv_core.channels.discord.account import masked_reason
from gsv_core.channels.discord.seam import DiscordPost
from gsv_core.channels.shaping import split_text
from gsv_core.errors import GsvError
from gsv_core.errors import Unavailable

log = logging.getLogger(__name__)

MAX_TEXT = 2000  # Discord's limit for one message


class DiscordSending(AccountAdapter[Account]):
    """Sending, editing and typing for `DiscordChannel`."""

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
                post = DiscordPost(peer.id, piece, reply_to, peer.thread_id, actions,
                                   suppress_embeds=not message.link_previews)  # fmt: skip
                sent = await account.gateway.send(post)
            except GsvError as exc:
                raise type(exc)(mask(exc.message), details=exc.details) from None
            except Exception as exc:
                raise Unavailable(f"discord send failed: {masked_reason(exc)}") from None
            account.status.last_activity = self._now_ms()
        return sent

    async def edit(self, edit: MessageEdit) -> None:
        """Replace a sent message's text and remove its buttons. `link_previews` changes
        nothing here: the message keeps the embeds setting it was sent with."""
        account = self._running(edit.account_id)
        peer = edit.peer
        try:
            await account.gateway.edit(
                peer.thread_id or peer.id, edit.message_id, edit.text[:MAX_TEXT]
            )
        except GsvError as exc:
            raise type(exc)(mask(exc.message), details=exc.details) from None
        except Exception as exc:
            raise Unavailable(f"discord edit failed: {masked_reason(exc)}") from None

    async def set_typing(self, account_id: str, peer: Peer, typing: bool) -> None:
        """Show "typing..." (Discord clears it after ten seconds or on the next message).
        A courtesy: failures are logged, never raised."""
        account = self._accounts.get(account_id)
        if not typing or account is None:
            return
        try:
            await account.gateway.typing(peer.thread_id or peer.id)
        except Exception as exc:
            log.info("discord typing in %s failed: %s", peer.id, masked_reason(exc))
