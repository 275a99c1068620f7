"""A fake of the Graph API parts the WhatsApp Cloud API adapter uses, on 127.0.0.1, plus
helpers that build (and sign) the webhook posts Meta would send.

    async with fake_graph() as graph:
        config = {**CREDENTIALS, "apiBaseUrl": graph.api_url}
        media_id = graph.add_media(b"...", "image/jpeg")
        body = webhook_body(image_message(media_id, caption="look"))
        ... POST body to the gateway with {"X-Hub-Signature-256": sign(body)}
        graph.sent[-1]                       # what the adapter sent (POST .../messages)

Routes under `/v21.0`: `GET /{phone-number-id}` (the number's details), `POST
/{phone-number-id}/messages` (text only; `text.body` at most 4,096 characters, recorded in
`sent`), `GET /{media-id}` (a short-lived download URL). Media bytes are served at
`/media/{id}`. Every route wants `Authorization: Bearer ACCESS_TOKEN`; a wrong token gets
the OAuthException (code 190) Meta answers.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
from collections.abc import AsyncIterator
from collections.abc import Callable
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web

ACCESS_TOKEN = "EAAGfakeaccesstokensecret0123456789"
PHONE_NUMBER_ID = "106540352242922"
APP_SECRET = "fake-app-secret-0123456789"
VERIFY_TOKEN = "fake-verify-token-xyz"
DISPLAY_NUMBER = "+1 555-010-0000"
ADA = "15551234567"  # a WhatsApp id (wa_id): the number without "+"
BOB = "447700900123"
NAMES = {ADA: "Ada", BOB: "Bob"}
CREDENTIALS = {
    "accessToken": ACCESS_TOKEN,
    "phoneNumberId": PHONE_NUMBER_ID,
    "appSecret": APP_SECRET,
    "verifyToken": VERIFY_TOKEN,
}
MAX_TEXT = 4096


class FakeGraph:
    def __init__(self, port: int = 0) -> None:
        self.port = port
        self.sent: list[dict[str, Any]] = []
        self.requests: list[tuple[str, str]] = []  # (method, path) of every call
        self.media: dict[str, tuple[bytes, str]] = {}
        self._ids = itertools.count(1)
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/v21.0/{object_id}", self._get_object)
        app.router.add_post("/v21.0/{phone_id}/messages", self._post_message)
        app.router.add_get("/media/{media_id}", self._get_media)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        return f"{self.url}/v21.0"

    async def wait_for(self, predicate: Callable[[], Any]) -> None:
        async with self._changed:
            await self._changed.wait_for(predicate)

    def add_media(self, data: bytes, mime_type: str) -> str:
        media_id = f"{9000 + len(self.media)}"
        self.media[media_id] = (data, mime_type)
        return media_id

    # -- routes ----------------------------------------------------------------------------

    async def _get_object(self, request: web.Request) -> web.Response:
        self.requests.append(("GET", request.path))
        if not _authorized(request):
            return _oauth_error()
        object_id = request.match_info["object_id"]
        if object_id == PHONE_NUMBER_ID:
            return web.json_response({"display_phone_number": DISPLAY_NUMBER,
                                      "verified_name": "GSV Test", "id": PHONE_NUMBER_ID})  # fmt: skip
        if object_id in self.media:
            data, mime = self.media[object_id]
            return web.json_response({
                "messaging_product": "whatsapp", "url": f"{self.url}/media/{object_id}?sig=x",
                "mime_type": mime, "sha256": hashlib.sha256(data).hexdigest(),
                "file_size": len(data), "id": object_id,
            })  # fmt: skip
        return _graph_error(400, 100, f"Unsupported get request. Object with ID '{object_id}' "
                                      "does not exist")  # fmt: skip

    async def _post_message(self, request: web.Request) -> web.Response:
        self.requests.append(("POST", request.path))
        if not _authorized(request):
            return _oauth_error()
        if request.match_info["phone_id"] != PHONE_NUMBER_ID:
            return _graph_error(400, 100, "Unsupported post request")
        body = await request.json()
        text = (body.get("text") or {}).get("body") or ""
        if body.get("messaging_product") != "whatsapp" or body.get("type") != "text" or not text:
            return _graph_error(400, 100, "Invalid parameter")
        if not str(body.get("to", "")).isdigit():
            return _graph_error(400, 100, "Invalid parameter 'to'")
        if len(text) > MAX_TEXT:
            return _graph_error(
                400, 100, "Param text['body'] must be at most 4096 characters long."
            )
        message_id = f"wamid.OUT{next(self._ids)}"
        self.sent.append({**body, "id": message_id})
        async with self._changed:
            self._changed.notify_all()
        return web.json_response({"messaging_product": "whatsapp",
                                  "contacts": [{"input": body["to"], "wa_id": body["to"]}],
                                  "messages": [{"id": message_id}]})  # fmt: skip

    async def _get_media(self, request: web.Request) -> web.Response:
        self.requests.append(("GET", request.path))
        if not _authorized(request):
            return web.Response(status=401, text="unauthorized")
        found = self.media.get(request.match_info["media_id"])
        if found is None:
            return web.Response(status=404, text="not found")
        return web.Response(body=found[0], content_type=found[1])


def _authorized(request: web.Request) -> bool:
    return request.headers.get("Authorization") == f"Bearer {ACCESS_TOKEN}"


def _oauth_error() -> web.Response:
    return _graph_error(401, 190, "Invalid OAuth access token - Cannot parse access token",
                        "OAuthException")  # fmt: skip


def _graph_error(
    status: int, code: int, message: str, kind: str = "GraphMethodException"
) -> web.Response:
    error = {"message": message, "type": kind, "code": code, "fbtrace_id": "AbCdEf"}
    return web.json_response({"error": error}, status=status)


@asynccontextmanager
async def fake_graph(port: int = 0) -> AsyncIterator[FakeGraph]:
    graph = FakeGraph(port)
    await graph.start()
    try:
        yield graph
    finally:
        await graph.close()


# -- webhook posts ---------------------------------------------------------------------------

_message_ids = itertools.count(1)


def sign(body: bytes, secret: str = APP_SECRET) -> str:
    """The `X-Hub-Signature-256` header Meta sends with `body`."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def message(kind: str, content: dict[str, Any], sender: str = ADA, **extra: Any) -> dict[str, Any]:
    return {"from": sender, "id": f"wamid.IN{next(_message_ids)}", "timestamp": "1700000000",
            "type": kind, kind: content, **extra}  # fmt: skip


def text_message(text: str, sender: str = ADA, **extra: Any) -> dict[str, Any]:
    return message("text", {"body": text}, sender, **extra)


def webhook_body(*messages: dict[str, Any], phone_number_id: str = PHONE_NUMBER_ID) -> bytes:
    """A webhook post of Meta's shape carrying `messages` (their senders as contacts)."""
    contacts = [{"profile": {"name": NAMES.get(m["from"], "Someone")}, "wa_id": m["from"]}
                for m in messages]  # fmt: skip
    value = {"messaging_product": "whatsapp",
             "metadata": {"display_phone_number": "15550100000", "phone_number_id": phone_number_id},
             "contacts": contacts, "messages": list(messages)}  # fmt: skip
    payload = {"object": "whatsapp_business_account",
               "entry": [{"id": "WABA-1", "changes": [{"value": value, "field": "messages"}]}]}  # fmt: skip
    return json.dumps(payload).encode()


def status_body() -> bytes:
    """A delivery receipt: a webhook post without messages."""
    value = {"messaging_product": "whatsapp",
             "metadata": {"display_phone_number": "15550100000", "phone_number_id": PHONE_NUMBER_ID},
             "statuses": [{"id": "wamid.OUT1", "status": "delivered", "timestamp": "1700000001",
                           "recipient_id": ADA}]}  # fmt: skip
    payload = {"object": "whatsapp_business_account",
               "entry": [{"id": "WABA-1", "changes": [{"value": value, "field": "messages"}]}]}  # fmt: skip
    return json.dumps(payload).encode()
