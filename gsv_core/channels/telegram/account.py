"""A Telegram account: its settings from config, its state while running, the masking of
its bot token, and the gsv error for a Bot API failure.

The bot token is a secret and it is part of every Bot API URL: it is registered with a
logging filter that masks it in the records of this package, PTB and httpx, and every
message built from a library exception is masked too.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from dataclasses import field
from datetime import timedelta
from typing import TYPE_CHECKING
from typing import Any

from gsv_core.channels.accounts import config_key
from gsv_core.channels.base import AccountStatus
from gsv_core.channels.base import ChannelSink
from gsv_core.channels.redaction import TokenRedactor
from gsv_core.channels.redaction import failure_reason
from gsv_core.errors import Forbidden
from gsv_core.errors import GsvError
from gsv_core.errors import InvalidParams
from gsv_core.errors import RateLimited
from gsv_core.errors import TimedOut
from gsv_core.errors import Unauthorized
from gsv_core.errors import Unavailable

if TYPE_CHECKING:
    from telegram import Bot

DEFAULT_API = "https://api.telegram.org"
DEFAULT_POLL_TIMEOUT = 30  # seconds; Telegram allows up to 50
TOKEN_REJECTED = "telegram rejected the bot token"

# -- keeping the token out of logs -------------------------------------------------------

_PACKAGE = __name__.rpartition(".")[0]
_LOGGERS = (
    "httpx",
    "telegram",
    "telegram.Bot",
    "telegram.request.BaseRequest",
    "telegram.request.HTTPXRequest",
    *(f"{_PACKAGE}.{module}" for module in ("account", "channel", "connection", "sending",
                                            "conversion")),
)  # fmt: skip
_REDACTOR = TokenRedactor()
mask = _REDACTOR.mask


def protect(token: str) -> None:
    """Mask the token's secret part in this package's and the libraries' logs."""
    # the part after the colon is the secret; the bot id before it is public
    _REDACTOR.protect(token.partition(":")[2] or token, _LOGGERS)


def masked_reason(exc: BaseException) -> str:
    return failure_reason(exc, mask)


# -- configuration and per-account state -------------------------------------------------


@dataclass(frozen=True)
class Settings:
    token: str
    api_base: str
    poll_timeout: int


def load_settings(config: dict[str, Any]) -> Settings:
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
    return Settings(token.strip(), base.rstrip("/"), poll)


@dataclass
class Account:
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


def token_key(account_id: str) -> str:
    return config_key("telegram", account_id, "botToken")


def api_error(exc: Exception) -> GsvError:
    """The gsv error for a Bot API failure (messages masked)."""
    from telegram import error as tg

    why = masked_reason(exc)
    if isinstance(exc, tg.RetryAfter):
        wait = seconds(exc.retry_after) or 0.0
        return RateLimited(
            f"telegram rate limit: retry after {wait:g} s", details={"retryAfter": wait}
        )
    if isinstance(exc, tg.InvalidToken):
        return Unauthorized(TOKEN_REJECTED)
    if isinstance(exc, tg.Forbidden):
        return Forbidden(f"telegram refused: {why}")
    if isinstance(exc, tg.ChatMigrated):
        return InvalidParams(f"the telegram group moved to chat {exc.new_chat_id}")
    if isinstance(exc, tg.BadRequest):
        return InvalidParams(f"telegram rejected the request: {why}")
    if isinstance(exc, tg.TimedOut):
        return TimedOut("telegram did not answer in time")
    if isinstance(exc, tg.NetworkError):
        return Unavailable(f"telegram unreachable: {why}")
    return GsvError(f"telegram error: {why}")


def seconds(value: int | float | timedelta | None) -> float | None:
    if value is None:
        return None
    return value.total_seconds() if isinstance(value, timedelta) else float(value)
