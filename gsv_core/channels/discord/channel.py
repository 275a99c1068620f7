"""`DiscordChannel`: the Discord adapter's surface (start, stop, login, logout, status)
over its connection (`connection.py`) and sending (`sending.py`) halves."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable
from collections.abc import Callable
from typing import Any

from gsv_core.channels.accounts import start_command
from gsv_core.channels.base import ALL_CHAT_TYPES
from gsv_core.channels.base import Capabilities
from gsv_core.channels.base import ChannelSink
from gsv_core.channels.discord.account import Account
from gsv_core.channels.discord.account import load_token
from gsv_core.channels.discord.account import masked_reason
from gsv_core.channels.discord.account import protect
from gsv_core.channels.discord.account import token_key
from gsv_core.channels.discord.connection import DiscordConnection
from gsv_core.channels.discord.seam import DiscordGateway
from gsv_core.channels.discord.seam import DiscordPyGateway
from gsv_core.channels.discord.sending import MAX_TEXT
from gsv_core.channels.discord.sending import DiscordSending
from gsv_core.channels.inbound import MAX_MEDIA_BYTES
from gsv_core.errors import GsvError
from gsv_core.errors import Unauthorized

log = logging.getLogger(__name__)

MODE = "websocket"
GatewayFactory = Callable[[str], DiscordGateway]


class DiscordChannel(DiscordSending, DiscordConnection):
    """Discord bots (one per account id). `gateway_factory` builds the seam for a token;
    tests pass a fake, the gateway uses discord.py."""

    name = "discord"
    capabilities = Capabilities(
        ALL_CHAT_TYPES, media=True, threads=True, typing=True, buttons=True, max_text=MAX_TEXT
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
        super().__init__(sleep=sleep, clock=clock, rng=rng, max_backoff=max_backoff)
        self._factory = gateway_factory
        self._max_attachment = max_attachment_bytes

    async def start(self, account_id: str, config: dict[str, Any], sink: ChannelSink) -> None:
        """Check the token, then connect in the background. An unreachable Discord is not
        fatal (the gateway may boot before the network): the account keeps trying."""
        token = load_token(config, account_id)
        await self.stop(account_id)
        protect(token)
        gateway = self._factory(token)
        status = self._new_status(account_id, MODE)
        account = Account(status, sink, gateway)
        try:
            await account.gateway.login()
        except GsvError as exc:
            await account.gateway.close()
            error = masked_reason(exc)
            self._update(account, connected=False, authenticated=False, error=error)
            key = token_key(account_id)
            hint = f" (check {key})" if isinstance(exc, Unauthorized) else ""
            raise type(exc)(error + hint) from None
        except Exception as exc:
            self._lost(account, exc)
            account.failures = 1  # the background loop waits before trying again
        else:
            self._authenticated(account)
        self._accounts[account_id] = account
        self._spawn(account, self._run(account))

    async def _close(self, account: Account) -> None:
        try:
            await account.gateway.close()
        except Exception as exc:  # closing a broken connection must not fail the stop
            log.info(
                "discord account %s closed uncleanly: %s",
                account.status.account_id,
                masked_reason(exc),
            )

    def _connected_as(self, account: Account) -> str:
        return f"Discord bot {account.gateway.bot_name} is connected."

    def _setup(self, account_id: str) -> tuple[str, list[str]]:
        return "Discord has no QR login: a bot signs in with its token.", [
            "Open https://discord.com/developers/applications, create an application "
            "(New Application), open Bot and press Reset Token to get the token.",
            "On the same Bot page, under Privileged Gateway Intents, turn on "
            "Message Content Intent (without it the bot cannot read messages).",
            "Invite the bot to your server: OAuth2 > URL Generator, scope `bot`, "
            "permissions Send Messages, Send Messages in Threads, Read Message History; "
            "open the URL. (People can DM the bot once they share a server with it.)",
            f"gsv config set {token_key(account_id)} <the token>",
            start_command(self.name, account_id),
        ]
