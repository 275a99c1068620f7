"""A Slack account: its two tokens and API base from config, its state while running,
and the gsv error for a Web API failure.

The tokens travel only in Authorization headers (slack-sdk redacts them in its debug
logs); messages built from exceptions are masked all the same.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from dataclasses import field
from typing import TYPE_CHECKING
from typing import Any
from urllib.parse import urlsplit

from gsv_core.channels.accounts import config_key
from gsv_core.channels.base import AccountStatus
from gsv_core.channels.base import ChannelSink
from gsv_core.channels.redaction import failure_reason
from gsv_core.channels.redaction import mask_secrets
from gsv_core.errors import GsvError
from gsv_core.errors import InvalidParams
from gsv_core.errors import RateLimited
from gsv_core.errors import Unauthorized

if TYPE_CHECKING:
    from slack_sdk.web.async_client import AsyncWebClient

DEFAULT_API = "https://slack.com/api/"
WEB_TIMEOUT = 30  # seconds for a Web API call
# errors that mean "this token will never work": stop instead of retrying forever
AUTH_ERRORS = frozenset({"invalid_auth", "not_authed", "account_inactive", "token_revoked",
                         "token_expired", "not_allowed_token_type"})  # fmt: skip


@dataclass(frozen=True)
class Settings:
    app_token: str
    bot_token: str
    api_base: str

    def mask(self, text: str) -> str:
        return mask_secrets(text, (self.app_token, self.bot_token))


@dataclass
class Account:
    status: AccountStatus
    sink: ChannelSink
    settings: Settings
    web: AsyncWebClient
    bot_user_id: str = ""
    bot_name: str = ""
    names: dict[str, str | None] = field(default_factory=dict)  # user id -> display name
    # channel id -> channel_type seen on message events (app_mention events lack it)
    channel_types: dict[str, str] = field(default_factory=dict)
    task: asyncio.Task[None] | None = None


def load_settings(config: dict[str, Any], account_id: str) -> Settings:
    tokens: dict[str, str] = {}
    for key, prefix, what in (("appToken", "xapp-", "an app-level token (Socket Mode)"),
                              ("botToken", "xoxb-", "a bot token")):  # fmt: skip
        value = config.get(key)
        if not isinstance(value, str) or not value.strip().startswith(prefix):
            problem = "is not set" if not value else f"does not start with {prefix}"
            raise InvalidParams(
                f"slack needs {what}: {setting_key(account_id, key)} {problem}. "
                f"`gsv channels login slack` explains how to get one."
            )
        tokens[key] = value.strip()
    base = config.get("apiBaseUrl") or DEFAULT_API
    if not isinstance(base, str) or urlsplit(base).scheme not in ("http", "https"):
        raise InvalidParams(f"channels.slack.apiBaseUrl must be an http(s) URL, not {base!r}")
    return Settings(tokens["appToken"], tokens["botToken"], base.rstrip("/") + "/")


def web_client(settings: Settings) -> AsyncWebClient:
    """The account's Web API client over one HTTP session, so its calls share connections
    (without a session slack-sdk opens one per call: a TCP and TLS handshake each). The
    session is the account's to close: `close_web`, when it stops or its start fails."""
    import aiohttp
    from slack_sdk.web.async_client import AsyncWebClient

    session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=WEB_TIMEOUT))
    return AsyncWebClient(
        token=settings.bot_token, base_url=settings.api_base, timeout=WEB_TIMEOUT, session=session
    )


async def close_web(web: AsyncWebClient) -> None:
    """Close the client's session (a call made after this opens a session of its own)."""
    if web.session is not None:
        await web.session.close()


def network_errors() -> tuple[type[BaseException], ...]:
    import aiohttp
    from websockets.exceptions import WebSocketException

    return (OSError, TimeoutError, aiohttp.ClientError, WebSocketException)


def error_code(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    try:
        return str(response["error"]) if response is not None else "unknown_error"
    except (KeyError, TypeError):
        return "unknown_error"


def api_error(exc: Exception) -> GsvError:
    error = error_code(exc)
    if error in AUTH_ERRORS:
        return Unauthorized(f"slack rejected the bot token ({error})")
    if error == "ratelimited":
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None) or {}
        wait = float(headers.get("Retry-After", 1) or 1)
        return RateLimited(f"slack rate limit: retry after {wait:g} s",
                           details={"retryAfter": wait})  # fmt: skip
    return InvalidParams(f"slack refused the message: {error}")


def masked_reason(exc: BaseException, settings: Settings) -> str:
    return failure_reason(exc, settings.mask)


def setting_key(account_id: str, name: str) -> str:
    return config_key("slack", account_id, name)
