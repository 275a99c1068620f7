"""The WhatsApp webhook, the trust boundary: a GET is Meta's verify handshake
(`hub.verify_token` must match the configured `verifyToken`); a POST must carry
`X-Hub-Signature-256`, the HMAC-SHA256 of the raw body under the app secret, compared in
constant time; anything else is refused before it is read. A POST is answered 200 only
after every message in it is in the journal, so Meta redelivers what a crash lost (and the
journal drops repeats). Media are fetched with the token into inline base64 Media."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import re
from typing import Any

from gsv_core.channels.accounts import AccountAdapter
from gsv_core.channels.base import HttpRequest
from gsv_core.channels.base import HttpResponse
from gsv_core.channels.base import InboundMessage
from gsv_core.channels.base import Media
from gsv_core.channels.base import Peer
from gsv_core.channels.base import Sender
from gsv_core.channels.whatsapp.account import Account
from gsv_core.channels.whatsapp.account import masked_reason
from gsv_core.channels.whatsapp.conversion import MAX_MEDIA_BYTES
from gsv_core.channels.whatsapp.conversion import MEDIA_KINDS
from gsv_core.channels.whatsapp.conversion import messages_of
from gsv_core.channels.whatsapp.conversion import seconds_to_ms
from gsv_core.routing import normalize_e164

log = logging.getLogger(__name__)


class WhatsAppWebhook(AccountAdapter[Account]):
    """Receiving for `WhatsAppChannel`."""

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
        for phone_number_id, value, message in messages_of(payload):
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
        self, account: Account, value: dict[str, Any], message: dict[str, Any]
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
            timestamp=seconds_to_ms(message.get("timestamp")),
            reply_to_id=context.get("id"),
            reply_to_bot=bool(context) and normalize_e164(context.get("from")) == own_number,
            media=tuple(media),
            location=location,
        )

    async def _content(
        self, account: Account, kind: str, message: dict[str, Any]
    ) -> tuple[str, list[Media], dict[str, Any] | None]:
        """(text, downloaded media, location) of one message."""
        found = message.get(kind)
        body: dict[str, Any] = found if isinstance(found, dict) else {}
        if kind == "text":
            return str(body.get("body") or ""), [], None
        if kind in MEDIA_KINDS:
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

    async def _download(self, account: Account, kind: str, body: dict[str, Any]) -> Media | str:
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
            log.warning("whatsapp media %s not downloaded: %s", label, masked_reason(exc, settings))
            return f"[attachment not downloaded: {label}]"
        mime = str(body.get("mime_type") or info.get("mime_type") or "application/octet-stream")
        return Media(type=MEDIA_KINDS[kind], mime_type=mime.split(";")[0].strip(),
                     data=base64.b64encode(bytes(data)).decode("ascii"),
                     filename=body.get("filename"), size=len(data))  # fmt: skip


def _signed(body: bytes, header: str, secret: str) -> bool:
    """Whether `X-Hub-Signature-256` is `sha256=` + HMAC-SHA256(body, app secret)."""
    if not header.startswith("sha256="):
        return False
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header.removeprefix("sha256=").strip().lower())


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())
