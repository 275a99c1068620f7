"""A fake of Discord's REST API over HTTPS on 127.0.0.1, for driving discord.py itself (and
so `DiscordPyGateway`) over real HTTP.

discord.py has no base-URL option. Its `discord.Client` takes an aiohttp `connector`
instead (a documented option), and `DiscordPyGateway` a factory for one: the connector
made here resolves discord.com to this server and trusts its self-signed certificate, so
discord.py sends its real requests, bodies and all, to the fake.

    async with fake_discord_api(tmp_path) as api:
        gateway = DiscordPyGateway(TOKEN, connector=api.connector)
        await gateway.login()
        await gateway.send(DiscordPost(DM_CHANNEL, "hi"))
        api.requests[-1]      # Request("POST", "/api/v10/channels/<id>/messages", {...})

Routes under `/api/v10`: `GET /users/@me` and `GET /oauth2/applications/@me` (what a
login asks), `POST /channels/{id}/messages` (a new message: the body is recorded and the
message returned as Discord does), `PATCH /channels/{id}/messages/{id}` (an edit of one of
those; the fields it leaves out keep their values, flags included). A token other than
`TOKEN` gets 401. Needs the `openssl` command for the certificate (the caller skips
without it).
"""

from __future__ import annotations

import itertools
import json
import socket
import ssl
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.abc import AbstractResolver
from aiohttp.abc import ResolveResult

from tests.fakes.discord_seam import BOT_ID
from tests.fakes.discord_seam import TOKEN

HOST = "discord.com"
BOT_USER = {"id": BOT_ID, "username": "gsv-bot", "discriminator": "0", "avatar": None,
            "global_name": "gsv-bot", "bot": True}  # fmt: skip
APPLICATION = {"id": BOT_ID, "name": "gsv", "icon": None, "description": "",
               "bot_public": False, "bot_require_code_grant": False, "verify_key": "0" * 64,
               "owner": {**BOT_USER, "id": "111000000000000001", "bot": False}, "flags": 0}  # fmt: skip


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    body: dict[str, Any]


def make_certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate (and its key) for discord.com, valid for a day."""
    cert, key = directory / "discord-cert.pem", directory / "discord-key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", f"/CN={HOST}", "-addext", f"subjectAltName=DNS:{HOST}",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


class _ToTheFake(AbstractResolver):
    """discord.com is this server; any other host is not reachable from a test."""

    def __init__(self, port: int) -> None:
        self.port = port

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        if host != HOST:
            raise OSError(f"no network in tests: {host}")
        return [ResolveResult(hostname=host, host="127.0.0.1", port=self.port,
                              family=socket.AF_INET, proto=0, flags=socket.AI_NUMERICHOST)]  # fmt: skip

    async def close(self) -> None:
        pass


@dataclass
class FakeDiscordAPI:
    cert: Path
    key: Path
    port: int = 0
    requests: list[Request] = field(default_factory=list)
    messages: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> message
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _runner: web.AppRunner | None = None

    def connector(self) -> aiohttp.BaseConnector:
        """For `DiscordPyGateway(connector=...)`: discord.py's HTTP, sent here."""
        trust = ssl.create_default_context(cafile=str(self.cert))
        return aiohttp.TCPConnector(resolver=_ToTheFake(self.port), ssl=trust)

    def sent(self, method: str) -> list[Request]:
        return [r for r in self.requests if r.method == method]

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/api/v10/users/@me", self._me)
        app.router.add_get("/api/v10/oauth2/applications/@me", self._application)
        app.router.add_post("/api/v10/channels/{channel}/messages", self._post)
        app.router.add_patch("/api/v10/channels/{channel}/messages/{message}", self._patch)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await self._runner.setup()
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(self.cert, self.key)
        await web.TCPSite(self._runner, "127.0.0.1", self.port, ssl_context=tls).start()
        self.port = self._runner.addresses[0][1]

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _record(self, request: web.Request) -> web.Response | None:
        body = await request.json() if request.can_read_body else {}
        self.requests.append(Request(request.method, request.path, body))
        if request.headers.get("Authorization") != f"Bot {TOKEN}":
            return _json({"message": "401: Unauthorized", "code": 0}, status=401)
        return None

    async def _me(self, request: web.Request) -> web.Response:
        return await self._record(request) or _json(BOT_USER)

    async def _application(self, request: web.Request) -> web.Response:
        return await self._record(request) or _json(APPLICATION)

    async def _post(self, request: web.Request) -> web.Response:
        refused = await self._record(request)
        if refused is not None:
            return refused
        body = self.requests[-1].body
        message_id = f"80000000000000{next(self._ids):04d}"
        message = {
            "id": message_id, "channel_id": request.match_info["channel"], "author": BOT_USER,
            "content": body.get("content", ""), "timestamp": "2024-05-01T12:00:00+00:00",
            "edited_timestamp": None, "tts": False, "mention_everyone": False, "mentions": [],
            "mention_roles": [], "attachments": [], "embeds": [], "pinned": False, "type": 0,
            "flags": body.get("flags", 0), "components": body.get("components", []),
        }  # fmt: skip
        self.messages[message_id] = message
        return _json(message)

    async def _patch(self, request: web.Request) -> web.Response:
        refused = await self._record(request)
        if refused is not None:
            return refused
        message = self.messages.get(request.match_info["message"])
        if message is None:
            return _json({"message": "Unknown Message", "code": 10008}, status=404)
        body = self.requests[-1].body
        message.update({k: body[k] for k in ("content", "flags", "components") if k in body})
        return _json(message)


def _json(data: Any, status: int = 200) -> web.Response:
    # exactly `application/json`, as Discord sends it: discord.py decodes no other type
    return web.Response(body=json.dumps(data).encode(), status=status,
                        content_type="application/json")  # fmt: skip


@asynccontextmanager
async def fake_discord_api(directory: Path) -> AsyncIterator[FakeDiscordAPI]:
    api = FakeDiscordAPI(*make_certificate(directory))
    await api.start()
    try:
        yield api
    finally:
        await api.close()
