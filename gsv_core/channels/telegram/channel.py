"""`TelegramChannel`: the Telegram adapter's surface (start, stop, login, logout, status)
over its connection (`connection.py`) and sending (`sending.py`) halves."""

from __future__ import annotations

from typing import Any

from gsv_core.channels.accounts import start_command
from gsv_core.channels.base import ALL_CHAT_TYPES
from gsv_core.channels.base import Capabilities
from gsv_core.channels.base import ChannelSink
from gsv_core.channels.telegram.account import Account
from gsv_core.channels.telegram.account import load_settings
from gsv_core.channels.telegram.account import protect
from gsv_core.channels.telegram.account import token_key
from gsv_core.channels.telegram.connection import TelegramPolling
from gsv_core.channels.telegram.formatting import MAX_TEXT
from gsv_core.channels.telegram.sending import TelegramSending


class TelegramChannel(TelegramSending, TelegramPolling):
    """Telegram bots (one per account id), receiving by long polling."""

    name = "telegram"
    capabilities = Capabilities(
        ALL_CHAT_TYPES, media=True, typing=True, threads=True, buttons=True, max_text=MAX_TEXT
    )

    async def start(self, account_id: str, config: dict[str, Any], sink: ChannelSink) -> None:
        """Validate the token with getMe, then poll in the background. A network failure
        here is not fatal: the account keeps trying (the gateway may boot before the
        network does) and its status says why it is not connected."""
        from telegram import Bot

        settings = load_settings(config)
        await self.stop(account_id)
        protect(settings.token)
        status = self._new_status(account_id, "polling")
        bot = Bot(
            settings.token,
            base_url=f"{settings.api_base}/bot",
            base_file_url=f"{settings.api_base}/file/bot",
        )
        account = Account(status, sink, bot, settings.poll_timeout)
        connected = await self._admit(account, self._connect(account), bot.shutdown)
        self._spawn(account, self._run(account, connected))

    async def _close(self, account: Account) -> None:
        """Confirm the handled updates, then close the HTTP clients."""
        await self._confirm(account)
        await account.bot.shutdown()

    def _connected_as(self, account: Account) -> str:
        return f"Telegram bot @{account.username} is connected."

    def _setup(self, account_id: str) -> tuple[str, list[str]]:
        return "Telegram has no QR login: a bot signs in with its token.", [
            "In Telegram, open @BotFather and send /newbot (or /token for an existing bot).",
            f"gsv config set {token_key(account_id)} <the token BotFather gave you>",
            start_command(self.name, account_id),
        ]
