"""The WhatsApp adapter: the official WhatsApp Business Cloud API (Meta's Graph API) over
httpx. Messages arrive as webhooks at `/channels/whatsapp/webhook` on the gateway's own
port (the HTTP front door); replies go out with `POST /{phoneNumberId}/messages`.

The webhook is the trust boundary: a GET is Meta's verify handshake (`hub.verify_token`
must match the configured `verifyToken`); a POST must carry `X-Hub-Signature-256`, the
HMAC-SHA256 of the raw body under the app secret, compared in constant time; anything
else is refused before it is read. A POST is answered 200 only after every message in it
is in the journal, so Meta redelivers what a crash lost (and the journal drops repeats).

There is no socket to keep: "connected" means the token and phone number id were checked
against the Graph API. When the Graph API cannot be reached (at start or on a send) the
account re-checks with jittered exponential backoff; a rejected token stops it with a
clear status. Phone numbers become E.164 (`+15551234567`). The access token travels only
in the Authorization header; secrets never reach logs or errors.

httpx is imported when an account starts, not with this module.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import logging
import random
import re
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from gsv_core.channels.base import (
    AccountStatus,
    Capabilities,
    ChannelSink,
    HttpRequest,
    HttpResponse,
    InboundMessage,
    LoginResult,
    Media,
    OutboundMessage,
    Peer,
    Sender,
)
from gsv_core.errors import GsvError, InvalidParams, RateLimited, Unauthorized, Unavailable
from gsv_core.routing import normalize_e164

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)

DEFAULT_API = "https://graph.facebook.com/v21.0"
WEBHOOK_PATH = "/channels/whatsapp/webhook"
MAX_TEXT = 4096
MAX_MEDIA_BYTES = 25 * 1024 * 1024
TOKEN_REJECTED = "whatsapp rejected the access token"
_MEDIA_KINDS = {"image": "image", "sticker": "image", "audio": "audio", "video": "video",
                "document": "document"}  # fmt: skip
_RATE_CODES = {4, 80007, 130429, 131048, 131056}


@dataclass(frozen=True)
class _Settings:
    access_token: str
    phone_number_id: str
    app_secret: str
    verify_token: str
    api_base: str

    def mask(self, text: str) -> str:
        for secret in (self.access_token, self.app_secret, self.verify_token):
            text = text.replace(secret, "***")
        return text


@dataclass
class _Account:
    status: AccountStatus
    sink: ChannelSink
    settings: _Settings
    client: httpx.AsyncClient
    task: asyncio.Task[None] | None = None  # re-checking after the Graph API was lost


class WhatsAppChannel:
    """WhatsApp Business phone numbers (one per account id), over webhooks."""

    name = "whatsapp"
    capabilities = Capabilities(chat_types=("dm",), media=True, typing=False, max_text=MAX_TEXT)

    def __init__(
        self,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
        min_backoff: float = 1.0,
        max_backoff: float = 300.0,
    ) -> None:
        self._sleep = sleep
        self._clock = clock
        self._rng = rng or random.Random()
        self._min_backoff = min_backoff
        self._max_backoff = max_backoff
        self._accounts: dict[str, _Account] = {}
        self._statuses: dict[str, AccountStatus] = {}

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self, account_id: str, config: dict[str, Any], sink: ChannelSink) -> None:
        """Check the token and phone number id; then webhooks for the number are taken.
        An unreachable Graph API is not fatal: the account keeps checking."""
        import httpx

        settings = _settings(config, account_id)
        await self.stop(account_id)
        status = AccountStatus(account_id, mode="webhook", extra={"webhookPath": WEBHOOK_PATH})
        self._statuses[account_id] = status
        client = httpx.AsyncClient(
            base_url=settings.api_base + "/",
            headers={"Authorization": f"Bearer {settings.access_token}"},
            timeout=30,
        )
        account = _Account(status, sink, settings, client)
        try:
            checked = await self._check(account)
        except BaseException:
            await client.aclose()
            raise
        self._accounts[account_id] = account
        if not checked:
            self._recheck_later(account)

    async def stop(self, account_id: str) -> None:
        account = self._accounts.pop(account_id, None)
        if account is None:
            return
        if account.task is not None:
            account.task.cancel()
            await asyncio.wait([account.task])
        await account.client.aclose()
        self._update(account, connected=False)
        log.info("whatsapp account %s stopped", account_id)

    def status(self, account_id: str | None = None) -> list[AccountStatus]:
        return [
            replace(s, extra=dict(s.extra))
            for key, s in self._statuses.items()
            if account_id in (None, key)
        ]

    async def login(self, account_id: str, force: bool) -> LoginResult:
        account = self._accounts.get(account_id)
        if account is not None and account.status.connected and not force:
            number = account.status.extra.get("displayPhoneNumber", "its number")
            return LoginResult(f"WhatsApp Business number {number} is connected.")
        key = _key_prefix(account_id)
        start = "gsv channels start whatsapp" + (
            "" if account_id == "default" else f" {account_id}"
        )
        return LoginResult(
            "WhatsApp has no QR login here: gsv uses the official WhatsApp Business Cloud API.\n"
            "1. At https://developers.facebook.com/apps create an app (type Business) and add "
            "the WhatsApp product.\n"
            "2. WhatsApp > API Setup: note the Phone number ID of your business number.\n"
            "3. Business Settings > System users: add one, give it the app, and generate a "
            "permanent token with whatsapp_business_messaging and whatsapp_business_management.\n"
            "4. App settings > Basic: copy the App secret.\n"
            f"5. gsv config set {key}.accessToken <permanent token>\n"
            f"   gsv config set {key}.phoneNumberId <phone number id>\n"
            f"   gsv config set {key}.appSecret <app secret>\n"
            f"   gsv config set {key}.verifyToken <a long random string you choose>\n"
            f"6. {start}\n"
            "7. WhatsApp > Configuration > Webhook: callback URL "
            f"https://<your gateway>{WEBHOOK_PATH} (public HTTPS, e.g. a reverse proxy or "
            "tunnel to the gateway port), the same verify token; subscribe to `messages`."
        )

    async def logout(self, account_id: str) -> None:
        await self.stop(account_id)
        log.info("whatsapp account %s logged out; its credentials stay in config", account_id)

    # -- checking the credentials ------------------------------------------------------------

    async def _check(self, account: _Account) -> bool:
        """Ask the Graph API about our phone number. False when it could not be reached;
        raises when it refused the token or does not know the number."""
        import httpx

        settings = account.settings
        try:
            response = await account.client.get(
                settings.phone_number_id, params={"fields": "display_phone_number,verified_name"}
            )
        except httpx.HTTPError as exc:
            self._lost(account, f"graph api unreachable: {_reason(exc, settings)}")
            return False
        if response.status_code >= 500:
            self._lost(account, f"graph api unavailable (HTTP {response.status_code})")
            return False
        if response.status_code >= 400:
            error = _graph_error(response, settings)
            self._update(account, connected=False, authenticated=False, error=error.message)
            raise error
        number = response.json()
        account.status.extra.update(
            displayPhoneNumber=number.get("display_phone_number"),
            verifiedName=number.get("verified_name"),
        )
        self._update(account, connected=True, authenticated=True, error=None)
        log.info("whatsapp account %s ready for %s", account.status.account_id,
                 number.get("display_phone_number"))  # fmt: skip
        return True

    def _lost(self, account: _Account, reason: str) -> None:
        if account.status.connected or account.status.error != reason:
            log.warning("whatsapp account %s: %s", account.status.account_id, reason)
        self._update(account, connected=False, error=reason)

    def _recheck_later(self, account: _Account) -> None:
        if account.task is None or account.task.done():
            name = f"whatsapp-check:{account.status.account_id}"
            account.task = asyncio.create_task(self._recheck(account), name=name)

    async def _recheck(self, account: _Account) -> None:
        failures = 0
        while True:
            failures += 1
            ceiling = min(self._max_backoff, self._min_backoff * 2.0 ** min(failures - 1, 16))
            await self._sleep(ceiling / 2 + self._rng.uniform(0, ceiling / 2))
            try:
                if await self._check(account):
                    return
            except GsvError as exc:
                log.error("whatsapp account %s stopped: %s", account.status.account_id,
                          exc.message)  # fmt: skip
                return

    # -- the webhook -------------------------------------------------------------------------

    async def handle_webhook(self, request: HttpRequest) -> HttpResponse:
        if request.method == "GET":
            return self._verify(request)
        return await self._receive(request)

    def _verify(self, request: HttpRequest) -> HttpResponse:
        """Meta's subscription handshake: echo hub.challenge if the verify token matches."""
        mode, token, challenge = (
            (request.query.get(name) or [""])[0]
            for name in ("hub.mode", "hub.verify_token", "hub.challenge")
        )
        known = [a.settings.verify_token for a in self._accounts.values()]
        if mode == "subscribe" and token and any(_same(token, mine) for mine in known):
            return HttpResponse(200, challenge.encode())
        log.warning("whatsapp webhook verification refused (verify token mismatch%s)",
                    "" if known else "; no whatsapp account is running")  # fmt: skip
        return HttpResponse(403, b"verify token mismatch\n")

    async def _receive(self, request: HttpRequest) -> HttpResponse:
        if not self._accounts:
            return HttpResponse(503, b"no whatsapp account is running\n")  # Meta retries
        signature = request.headers.get("x-hub-signature-256", "")
        signed = [a for a in self._accounts.values()
                  if _signed(request.body, signature, a.settings.app_secret)]  # fmt: skip
        if not signed:
            log.warning("whatsapp webhook refused: %s signature",
                        "bad" if signature else "missing")  # fmt: skip
            return HttpResponse(401, b"bad signature\n")
        try:
            payload = json.loads(request.body)
        except ValueError:
            return HttpResponse(400, b"body is not JSON\n")
        for phone_number_id, value, message in _messages(payload):
            account = next(
                (a for a in signed if a.settings.phone_number_id == phone_number_id), None
            )
            if account is None:
                log.warning("whatsapp message for phone number id %s: no account serves it",
                            phone_number_id)  # fmt: skip
                continue
            inbound = await self._inbound(account, value, message)
            if inbound is not None:
                account.status.last_activity = self._now_ms()
                await account.sink.inbound(inbound)  # stored before we answer 200
        return HttpResponse(200, b"ok\n")

    async def _inbound(
        self, account: _Account, value: dict[str, Any], message: dict[str, Any]
    ) -> InboundMessage | None:
        kind = str(message.get("type") or "")
        wa_id = str(message.get("from") or "")
        sender_id = normalize_e164(wa_id) or wa_id
        if not sender_id or not message.get("id") or kind in ("reaction", "system"):
            return None
        names = {c.get("wa_id"): (c.get("profile") or {}).get("name")
                 for c in value.get("contacts") or [] if isinstance(c, dict)}  # fmt: skip
        name = names.get(wa_id)
        text, media, location = await self._content(account, kind, message)
        context = message.get("context") or {}
        own_number = normalize_e164((value.get("metadata") or {}).get("display_phone_number"))
        return InboundMessage(
            channel=self.name,
            account_id=account.status.account_id,
            peer=Peer("dm", sender_id, name=name),
            sender=Sender(sender_id, name),
            message_id=str(message["id"]),
            text=text,
            timestamp=_ms(message.get("timestamp")),
            reply_to_id=context.get("id"),
            reply_to_bot=bool(context) and normalize_e164(context.get("from")) == own_number,
            media=tuple(media),
            location=location,
        )

    async def _content(
        self, account: _Account, kind: str, message: dict[str, Any]
    ) -> tuple[str, list[Media], dict[str, Any] | None]:
        """(text, downloaded media, location) of one message."""
        found = message.get(kind)
        body: dict[str, Any] = found if isinstance(found, dict) else {}
        if kind == "text":
            return str(body.get("body") or ""), [], None
        if kind in _MEDIA_KINDS:
            result = await self._download(account, kind, body)
            caption = str(body.get("caption") or "")
            if isinstance(result, Media):
                return caption, [result], None
            return "\n".join(part for part in (caption, result) if part), [], None
        if kind == "location":
            where = {"lat": body.get("latitude"), "lon": body.get("longitude"),
                     "name": body.get("name") or body.get("address")}  # fmt: skip
            return "", [], {k: v for k, v in where.items() if v is not None}
        if kind == "button":
            return str(body.get("text") or ""), [], None
        if kind == "interactive":
            reply = body.get("button_reply") or body.get("list_reply") or {}
            return str(reply.get("title") or ""), [], None
        return f"[unsupported WhatsApp message: {kind or 'unknown'}]", [], None

    async def _download(self, account: _Account, kind: str, body: dict[str, Any]) -> Media | str:
        """A media message as inline base64 Media (GET /{media-id} gives a short-lived URL,
        fetched with the token), or a note for the text saying why not."""
        import httpx

        label = str(body.get("filename") or kind)
        media_id = body.get("id")
        if not isinstance(media_id, str) or not re.fullmatch(r"[\w.-]+", media_id):
            return f"[attachment not available: {label}]"
        settings = account.settings
        data = bytearray()
        try:
            found = await account.client.get(media_id)
            if found.status_code != 200:
                return f"[attachment not downloaded: {label} (HTTP {found.status_code})]"
            info = found.json()
            if int(info.get("file_size") or 0) > MAX_MEDIA_BYTES:
                return f"[attachment skipped: {label} is over the 25 MB limit]"
            async with account.client.stream("GET", str(info["url"])) as response:
                if response.status_code != 200:
                    return f"[attachment not downloaded: {label} (HTTP {response.status_code})]"
                async for chunk in response.aiter_bytes():
                    data += chunk
                    if len(data) > MAX_MEDIA_BYTES:
                        return f"[attachment skipped: {label} is over the 25 MB limit]"
        except (httpx.HTTPError, ValueError, KeyError) as exc:
            log.warning("whatsapp media %s not downloaded: %s", label, _reason(exc, settings))
            return f"[attachment not downloaded: {label}]"
        mime = str(body.get("mime_type") or info.get("mime_type") or "application/octet-stream")
        return Media(type=_MEDIA_KINDS[kind], mime_type=mime.split(";")[0].strip(),
                     data=base64.b64encode(bytes(data)).decode("ascii"),
                     filename=body.get("filename"), size=len(data))  # fmt: skip

    # -- sending -----------------------------------------------------------------------------

    async def send(self, account_id: str, message: OutboundMessage) -> str | None:
        """Send a text message (a reply quotes the message it answers); returns its wamid."""
        import httpx

        account = self._running(account_id)
        to = re.sub(r"\D", "", message.peer.id)
        if not to:
            raise InvalidParams(
                f"whatsapp needs a phone number to write to, not {message.peer.id!r}"
            )
        body: dict[str, Any] = {
            "messaging_product": "whatsapp", "recipient_type": "individual", "to": to,
            "type": "text", "text": {"preview_url": False, "body": to_whatsapp(message.text)},
        }  # fmt: skip
        if message.reply_to_id:
            body["context"] = {"message_id": message.reply_to_id}
        try:
            response = await account.client.post(
                f"{account.settings.phone_number_id}/messages", json=body
            )
        except httpx.HTTPError as exc:
            reason = f"graph api unreachable: {_reason(exc, account.settings)}"
            self._lost(account, reason)
            self._recheck_later(account)
            raise Unavailable(reason) from None
        if response.status_code >= 400:
            error = _graph_error(response, account.settings)
            if isinstance(error, Unauthorized):
                self._update(account, connected=False, authenticated=False, error=error.message)
            raise error
        account.status.last_activity = self._now_ms()
        if not account.status.connected:  # the Graph API is back (and took our token)
            self._update(account, connected=True, authenticated=True, error=None)
        sent = response.json().get("messages") or [{}]
        return str(sent[0].get("id") or "") or None

    async def set_typing(self, account_id: str, peer: Peer, typing: bool) -> None:
        """No typing indicator here (capabilities.typing is False)."""

    # -- helpers -----------------------------------------------------------------------------

    def _running(self, account_id: str) -> _Account:
        account = self._accounts.get(account_id)
        if account is None:
            raise Unavailable(f"whatsapp account '{account_id}' is not running")
        return account

    def _update(self, account: _Account, **changes: Any) -> None:
        """Change the account's status; tell the sink when something changed."""
        status = account.status
        if all(getattr(status, key) == value for key, value in changes.items()):
            return
        for key, value in changes.items():
            setattr(status, key, value)
        try:
            account.sink.status_changed(self.name, replace(status, extra=dict(status.extra)))
        except Exception:
            log.exception("whatsapp status callback failed")

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)


# -- pure parts --------------------------------------------------------------------------------


def _settings(config: dict[str, Any], account_id: str) -> _Settings:
    values: dict[str, str] = {}
    for key in ("accessToken", "phoneNumberId", "appSecret", "verifyToken"):
        value = config.get(key)
        if isinstance(value, int) and key == "phoneNumberId":
            value = str(value)  # `gsv config set` may store the id as a number
        if not isinstance(value, str) or not value.strip():
            raise InvalidParams(
                f"whatsapp needs {_key_prefix(account_id)}.{key}: "
                "`gsv channels login whatsapp` explains the Cloud API set-up"
            )
        values[key] = value.strip()
    if not values["phoneNumberId"].isdigit():
        raise InvalidParams(f"{_key_prefix(account_id)}.phoneNumberId must be digits")
    base = config.get("apiBaseUrl") or DEFAULT_API
    if not isinstance(base, str) or urlsplit(base).scheme not in ("http", "https"):
        raise InvalidParams(f"channels.whatsapp.apiBaseUrl must be an http(s) URL, not {base!r}")
    return _Settings(values["accessToken"], values["phoneNumberId"], values["appSecret"],
                     values["verifyToken"], base.rstrip("/"))  # fmt: skip


def _signed(body: bytes, header: str, secret: str) -> bool:
    """Whether `X-Hub-Signature-256` is `sha256=` + HMAC-SHA256(body, app secret)."""
    if not header.startswith("sha256="):
        return False
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header.removeprefix("sha256=").strip().lower())


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())


def _messages(payload: Any) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(phone number id, change value, message) for every message of a webhook payload;
    delivery statuses and other fields are not conversation."""
    if not isinstance(payload, dict) or payload.get("object") != "whatsapp_business_account":
        return
    for entry in payload.get("entry") or []:
        for change in (entry or {}).get("changes") or []:
            value = (change or {}).get("value") or {}
            if change.get("field") != "messages" or not isinstance(value, dict):
                continue
            phone_number_id = str((value.get("metadata") or {}).get("phone_number_id") or "")
            for message in value.get("messages") or []:
                if isinstance(message, dict):
                    yield phone_number_id, value, message


def _graph_error(response: httpx.Response, settings: _Settings) -> GsvError:
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


def _reason(exc: BaseException, settings: _Settings) -> str:
    return settings.mask(str(exc).strip() or type(exc).__name__)[:200]


def _ms(timestamp: Any) -> int | None:
    try:
        return int(timestamp) * 1000
    except (TypeError, ValueError):
        return None


def _key_prefix(account_id: str) -> str:
    if account_id in ("", "default"):
        return "channels.whatsapp"
    return f"channels.whatsapp.accounts.{account_id}"


# -- Markdown -> WhatsApp formatting (*bold*, _italic_, ~strike~, ``` blocks) ---------------

_CODE = re.compile(r"(```.*?```|`[^`\n]+`)", re.S)
_WA_LINK = re.compile(r"\[([^\]\n]+)\]\(((?:https?://|mailto:)[^)\s]+)\)")
_WA_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)
_WA_BOLD = re.compile(r"\*\*(?!\s)(.+?)(?<!\s)\*\*")
_WA_ITALIC = re.compile(r"(?<![\w*])\*(?![\s*])([^*\n]+?)(?<![\s*])\*(?![\w*])")
_WA_STRIKE = re.compile(r"~~(?!\s)([^~\n]+?)(?<!\s)~~")


def to_whatsapp(markdown: str) -> str:
    """WhatsApp's formatting for an agent's Markdown reply; code is left as it is."""
    parts = _CODE.split(markdown.replace("\x01", ""))
    for index in range(0, len(parts), 2):  # even parts are outside code
        text = _WA_LINK.sub(r"\1 (\2)", parts[index])
        text = _WA_HEADING.sub("\x01\\1\x01", text)
        text = _WA_BOLD.sub("\x01\\1\x01", text)  # \x01 stands for `*` until italics are done
        text = _WA_ITALIC.sub(r"_\1_", text)
        parts[index] = _WA_STRIKE.sub(r"~\1~", text).replace("\x01", "*")
    return "".join(parts)
