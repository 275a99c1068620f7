"""Discord's side of an account's connection: running the gateway seam (started again
after network failures, with jittered exponential backoff), its connection reports, and
handing messages and button presses to the sink.

discord.py reconnects its gateway socket by itself and reports the losses, which show in
the status; a rejected token or a missing Message Content intent stops the account with a
clear status error. Discord does not redeliver a message, so a hand-over the sink refuses
is retried a few times and then logged as lost.
"""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass

from gsv_core.channels.accounts import AccountAdapter
from gsv_core.channels.base import ActionEvent
from gsv_core.channels.base import InboundMessage
from gsv_core.channels.base import Media
from gsv_core.channels.base import Sender
from gsv_core.channels.discord.account import Account
from gsv_core.channels.discord.account import mask
from gsv_core.channels.discord.account import masked_reason
from gsv_core.channels.discord.conversion import peer_of
from gsv_core.channels.discord.conversion import press_peer_of
from gsv_core.channels.discord.seam import DiscordAttachment
from gsv_core.channels.discord.seam import DiscordGateway
from gsv_core.channels.discord.seam import DiscordMessage
from gsv_core.channels.discord.seam import DiscordPress
from gsv_core.channels.media import media_kind
from gsv_core.channels.media import sort_downloads
from gsv_core.channels.media import too_big_note
from gsv_core.errors import GsvError
from gsv_core.errors import Unauthorized

log = logging.getLogger(__name__)

HANDOVER_ATTEMPTS = 3


@dataclass
class _Listener:
    """The `DiscordEvents` of one account."""

    channel: DiscordConnection
    account: Account

    async def message(self, message: DiscordMessage) -> None:
        await self.channel._receive(self.account, message)

    async def press(self, press: DiscordPress) -> str | None:
        return await self.channel._press(self.account, press)

    def connection(self, connected: bool, reason: str | None) -> None:
        self.channel._connection(self.account, connected, reason)


class DiscordConnection(AccountAdapter[Account]):
    """Connecting and receiving for `DiscordChannel`."""

    _max_attachment: int

    async def _run(self, account: Account) -> None:
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
                    account, connected=False, authenticated=authenticated, error=masked_reason(exc)
                )
                log.error("discord account %s stopped: %s", account_id, masked_reason(exc))
                return
            except Exception as exc:
                self._lost(account, exc)
            else:
                self._lost(account, None)  # the connection ended without our stop
            account.failures += 1

    def _lost(self, account: Account, exc: Exception | None) -> None:
        reason = (
            f"discord unreachable: {masked_reason(exc)}" if exc else "discord connection closed"
        )
        log.warning("discord account %s: %s; retrying", account.status.account_id, reason)
        self._update(account, connected=False, error=reason)

    def _connection(self, account: Account, connected: bool, reason: str | None) -> None:
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

    def _authenticated(self, account: Account) -> None:
        gateway = account.gateway
        account.status.extra = {
            k: v for k, v in (("botId", gateway.bot_user_id), ("botName", gateway.bot_name)) if v
        }
        self._update(account, authenticated=True)

    async def _receive(self, account: Account, message: DiscordMessage) -> None:
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
                        message.id, attempt, masked_reason(exc),
                    )  # fmt: skip
                    return
                log.warning(
                    "discord message %s not handed over: %s", message.id, masked_reason(exc)
                )
                await self._sleep(self._backoff(attempt))

    async def _press(self, account: Account, press: DiscordPress) -> str | None:
        """A button press, handed to the sink; its answer goes back to the presser. A
        failure is told to them: pressing again is the retry."""
        if press.user.bot:
            return None
        event = ActionEvent(
            channel=self.name,
            account_id=account.status.account_id,
            peer=press_peer_of(press),
            sender=Sender(press.user.id, press.user.name, press.user.handle),
            action_id=press.custom_id,
            message_id=press.message_id,
        )
        account.status.last_activity = self._now_ms()
        try:
            return await account.sink.action(event)
        except Exception as exc:
            log.error("discord button press not handled: %s", masked_reason(exc))
            return "Something went wrong; try again."

    async def _inbound(self, account: Account, message: DiscordMessage) -> InboundMessage:
        bot_id = account.gateway.bot_user_id
        downloads = [await self._download(account.gateway, a) for a in message.attachments]
        media, notes = sort_downloads(downloads)
        reply_to_bot = bool(bot_id) and message.reply_to_author_id == bot_id
        mentioned = bool(bot_id) and bot_id in message.mention_ids
        author = message.author
        return InboundMessage(
            channel=self.name,
            account_id=account.status.account_id,
            peer=peer_of(message),
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

    async def _download(
        self, gateway: DiscordGateway, attachment: DiscordAttachment
    ) -> Media | str:
        """The attachment as inline base64 Media, or a note for the text saying why not."""
        label, limit = attachment.filename, self._max_attachment
        if attachment.size > limit:
            return too_big_note(label, attachment.size, limit)
        try:
            data = await gateway.fetch_attachment(attachment.url, limit)
        except Exception as exc:
            log.warning("discord attachment %s not downloaded: %s", label, masked_reason(exc))
            return f"[attachment not downloaded: {label}]"
        if len(data) > limit:
            return too_big_note(label, len(data), limit)
        mime = attachment.content_type or "application/octet-stream"
        return Media(
            type=media_kind(mime),
            mime_type=mime,
            data=base64.b64encode(data).decode("ascii"),
            filename=attachment.filename,
            size=len(data),
            duration=attachment.duration,
        )
