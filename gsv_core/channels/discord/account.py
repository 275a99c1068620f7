"""A Discord account: its bot token from config (masked in logs and errors), and its
state while running."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from gsv_core.channels.accounts import config_key
from gsv_core.channels.base import AccountStatus
from gsv_core.channels.base import ChannelSink
from gsv_core.channels.discord.seam import DiscordGateway
from gsv_core.channels.redaction import TokenRedactor
from gsv_core.channels.redaction import failure_reason
from gsv_core.errors import InvalidParams

# -- keeping the token out of logs -------------------------------------------------------

_PACKAGE = __name__.rpartition(".")[0]
_LOGGERS = (
    *(f"{_PACKAGE}.{module}" for module in ("account", "channel", "connection", "sending",
                                            "seam")),
    "discord.client",
    "discord.gateway",
    "discord.http",
    "discord.state",
    "discord.shard",
)  # fmt: skip
_REDACTOR = TokenRedactor()
mask = _REDACTOR.mask


def protect(token: str) -> None:
    """Mask the token in this package's and discord.py's logs."""
    _REDACTOR.protect(token, _LOGGERS)


def masked_reason(exc: BaseException) -> str:
    return failure_reason(exc, mask)


# -- configuration and per-account state -------------------------------------------------


@dataclass
class Account:
    status: AccountStatus
    sink: ChannelSink
    gateway: DiscordGateway
    failures: int = 0  # failed runs since the connection was last up
    task: asyncio.Task[None] | None = None


def load_token(config: dict[str, Any], account_id: str) -> str:
    token = config.get("botToken")
    if not isinstance(token, str) or not token.strip():
        raise InvalidParams(
            "discord needs a bot token: create a bot in the Discord Developer Portal, then "
            f"`gsv config set {token_key(account_id)} <token>` "
            "(`gsv channels login discord` explains the steps)"
        )
    return token.strip()


def token_key(account_id: str) -> str:
    return config_key("discord", account_id, "botToken")
