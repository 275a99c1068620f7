"""A WhatsApp Business account: its credentials from config, its state while running,
and the gsv error for a Graph API error answer. Secrets never reach logs or errors."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any
from urllib.parse import urlsplit

from gsv_core.channels.accounts import config_prefix
from gsv_core.channels.base import AccountStatus
from gsv_core.channels.base import ChannelSink
from gsv_core.channels.redaction import failure_reason
from gsv_core.channels.redaction import mask_secrets
from gsv_core.errors import GsvError
from gsv_core.errors import InvalidParams
from gsv_core.errors import RateLimited
from gsv_core.errors import Unauthorized
from gsv_core.errors import Unavailable

if TYPE_CHECKING:
    import httpx

DEFAULT_API = "https://graph.facebook.com/v21.0"
TOKEN_REJECTED = "whatsapp rejected the access token"
_RATE_CODES = {4, 80007, 130429, 131048, 131056}


@dataclass(frozen=True)
class Settings:
    access_token: str
    phone_number_id: str
    app_secret: str
    verify_token: str
    api_base: str

    def mask(self, text: str) -> str:
        return mask_secrets(text, (self.access_token, self.app_secret, self.verify_token))


@dataclass
class Account:
    status: AccountStatus
    sink: ChannelSink
    settings: Settings
    client: httpx.AsyncClient
    task: asyncio.Task[None] | None = None  # re-checking after the Graph API was lost


def load_settings(config: dict[str, Any], account_id: str) -> Settings:
    values: dict[str, str] = {}
    for key in ("accessToken", "phoneNumberId", "appSecret", "verifyToken"):
        value = config.get(key)
        if isinstance(value, int) and key == "phoneNumberId":
            value = str(value)  # `gsv config set` may store the id as a number
        if not isinstance(value, str) or not value.strip():
            raise InvalidParams(
                f"whatsapp needs {setting_prefix(account_id)}.{key}: "
                "`gsv channels login whatsapp` explains the Cloud API set-up"
            )
        values[key] = value.strip()
    if not values["phoneNumberId"].isdigit():
        raise InvalidParams(f"{setting_prefix(account_id)}.phoneNumberId must be digits")
    base = config.get("apiBaseUrl") or DEFAULT_API
    if not isinstance(base, str) or urlsplit(base).scheme not in ("http", "https"):
        raise InvalidParams(f"channels.whatsapp.apiBaseUrl must be an http(s) URL, not {base!r}")
    return Settings(values["accessToken"], values["phoneNumberId"], values["appSecret"],
                     values["verifyToken"], base.rstrip("/"))  # fmt: skip


def graph_error(response: httpx.Response, settings: Settings) -> GsvError:
    """The gsv error for a Graph API error answer."""
    try:
        error = response.json().get("error") or {}
    except ValueError:
        error = {}
    code = error.get("code")
    text = settings.mask(str(error.get("message") or f"HTTP {response.status_code}"))[:200]
    if response.status_code == 401 or code == 190:
        return Unauthorized(f"{TOKEN_REJECTED} ({text}): check accessToken")
    if response.status_code == 429 or code in _RATE_CODES:
        return RateLimited(f"whatsapp rate limit: {text}")
    if code == 131047:
        return InvalidParams("whatsapp allows free-form replies only within 24 hours of the "
                             "person's last message")  # fmt: skip
    if response.status_code >= 500:
        return Unavailable(f"graph api unavailable: {text}")
    return InvalidParams(f"whatsapp refused the request: {text}")


def masked_reason(exc: BaseException, settings: Settings) -> str:
    return failure_reason(exc, settings.mask)


def setting_prefix(account_id: str) -> str:
    return config_prefix("whatsapp", account_id)
