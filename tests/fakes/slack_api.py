"""A fake Slack on 127.0.0.1: the Web API methods the Slack adapter uses and a Socket Mode
WebSocket server, in one aiohttp app that runs in the test's event loop.

    async with fake_slack() as slack:
        config = {"appToken": APP_TOKEN, "botToken": BOT_TOKEN, "apiBaseUrl": slack.api_url}
        ...                                          # start the channel with it
        await slack.wait_for(lambda: slack.sessions)  # the adapter is connected
        envelope = await slack.send_event(slack.dm("hello", user=ADA))
        await slack.wait_acked(envelope)              # the adapter acknowledged it
        slack.posted[-1]                              # what the bot sent (chat.postMessage)
        await slack.drop()                            # the socket dies without a goodbye
        envelope = await slack.press(slack.posted[-1], "approve:ab12cd:allow", user=ADA)

Web API (`POST|GET /api/<method>`, token in `Authorization: Bearer`): auth.test (bot
token), apps.connections.open (app token only; answers a single-use `ws://` URL of the
Socket Mode endpoint), chat.postMessage (bot token; recorded in `posted`, with any Block Kit
`blocks`), chat.update (edits a posted message in place; `blocks: []` removes its blocks, as
on Slack), chat.postEphemeral (recorded in `ephemeral`), users.info.
Files live at `/files/<id>/<name>` and need the bot token. Answers follow Slack's shapes,
including `{"ok": false, "error": "invalid_auth"}` for a wrong token.

Socket Mode: `hello` on connect, events wrapped in `events_api` envelopes, button presses
as `interactive` envelopes with a `block_actions` payload, and every
acknowledgement (`{"envelope_id": ...}`) recorded in `acks`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import uuid
from collections.abc import AsyncIterator
from collections.abc import Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from aiohttp import WSMsgType
from aiohttp import web

BOT_TOKEN = "xoxb-1111-2222-fakebottokensecret"
APP_TOKEN = "xapp-1-A0001-3333-fakeapptokensecret"
BOT_USER_ID = "U0BOT"
BOT_NAME = "gsv"
TEAM_ID = "T0001"
ADA = "U0ADA"
BOB = "U0BOB"
USERS: dict[str, dict[str, Any]] = {
    ADA: {"id": ADA, "name": "ada", "real_name": "Ada Lovelace",
          "profile": {"display_name": "ada", "real_name": "Ada Lovelace"}},
    BOB: {"id": BOB, "name": "bob", "real_name": "Bob",
          "profile": {"display_name": "", "real_name": "Bob"}},
}  # fmt: skip
MAX_TEXT = 40_000  # Slack's hard limit (it advises 4,000)


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    token: str | None


class FakeSlack:
    def __init__(self, port: int = 0) -> None:
        self.calls: list[Call] = []
        self.posted: list[dict[str, Any]] = []
        self.ephemeral: list[dict[str, Any]] = []
        self.acks: list[str] = []
        self.sessions = 0  # Socket Mode connections that got their hello
        self.files: dict[str, tuple[bytes, str]] = {}
        self.file_fetches: list[str | None] = []  # the token each file download carried
        self._tickets: set[str] = set()
        self._socket: web.WebSocketResponse | None = None
        self._transport: asyncio.BaseTransport | None = None
        # the HTTP connections Web API calls came on: a client that reuses one shows one
        self.api_connections: list[asyncio.BaseTransport] = []
        self._changed = asyncio.Condition()
        self._ts = itertools.count(1)
        self.port = port
        self._runner: web.AppRunner | None = None

    # -- running ---------------------------------------------------------------------------

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_get("/link", self._link)
        app.router.add_get("/files/{file_id}/{name}", self._file)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]

    async def close(self) -> None:
        if self._socket is not None:
            await self._socket.close()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/"

    async def wait_for(self, predicate: Callable[[], Any]) -> None:
        async with self._changed:
            await self._changed.wait_for(predicate)

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    # -- what tests do ---------------------------------------------------------------------

    async def send_event(self, event: dict[str, Any]) -> str:
        """Deliver an Events API event over the current socket; returns its envelope id."""
        await self.wait_for(lambda: self._socket is not None)
        assert self._socket is not None
        envelope_id = str(uuid.uuid4())
        await self._socket.send_str(json.dumps({
            "envelope_id": envelope_id, "type": "events_api", "accepts_response_payload": False,
            "retry_attempt": 0, "retry_reason": "",
            "payload": {"token": "verification-token", "team_id": TEAM_ID, "api_app_id": "A0001",
                        "type": "event_callback", "event_id": f"Ev{envelope_id[:8]}",
                        "event_time": 1_700_000_000, "event": event},
        }))  # fmt: skip
        return envelope_id

    async def press(self, posted: dict[str, Any], action_id: str, *, user: str = ADA) -> str:
        """`user` presses the button `action_id` of a posted message: an `interactive`
        envelope as Socket Mode delivers it. Returns its envelope id."""
        await self.wait_for(lambda: self._socket is not None)
        assert self._socket is not None
        envelope_id = str(uuid.uuid4())
        message = {"type": "message", "user": BOT_USER_ID, "ts": posted["ts"],
                   "text": posted["text"], "blocks": posted.get("blocks") or []}  # fmt: skip
        if posted.get("thread_ts"):
            message["thread_ts"] = posted["thread_ts"]
        action = {"type": "button", "action_id": action_id, "block_id": "b1",
                  "value": action_id, "action_ts": self.next_ts()}  # fmt: skip
        payload = {
            "type": "block_actions", "team": {"id": TEAM_ID},
            "user": {"id": user, "username": USERS.get(user, {}).get("name"), "team_id": TEAM_ID},
            "api_app_id": "A0001", "trigger_id": "1.2.3",
            "container": {"type": "message", "message_ts": posted["ts"],
                          "channel_id": posted["channel"], "is_ephemeral": False},
            "channel": {"id": posted["channel"], "name": "directmessage"},
            "message": message, "response_url": f"{self.url}/respond", "actions": [action],
        }  # fmt: skip
        await self._socket.send_str(json.dumps({
            "envelope_id": envelope_id, "type": "interactive", "accepts_response_payload": False,
            "payload": payload,
        }))  # fmt: skip
        return envelope_id

    def updates(self) -> list[Call]:
        return [call for call in self.calls if call.method == "chat.update"]

    async def send_raw(self, frame: dict[str, Any]) -> None:
        await self.wait_for(lambda: self._socket is not None)
        assert self._socket is not None
        await self._socket.send_str(json.dumps(frame))

    async def wait_acked(self, envelope_id: str) -> None:
        await self.wait_for(lambda: envelope_id in self.acks)

    async def drop(self) -> None:
        """The network goes away under the current socket (no close frame)."""
        await self.wait_for(lambda: self._transport is not None)
        assert self._transport is not None
        self._transport.abort()

    def open_api_connections(self) -> int:
        """How many of the Web API's HTTP connections the client still holds open."""
        return sum(not transport.is_closing() for transport in self.api_connections)

    def next_ts(self) -> str:
        return f"1700000{next(self._ts):03d}.000100"

    def message(
        self, text: str, *, user: str = ADA, channel: str = "D0ADA", channel_type: str = "im",
        ts: str | None = None, thread_ts: str | None = None, **extra: Any,
    ) -> dict[str, Any]:  # fmt: skip
        event = {"type": "message", "channel": channel, "user": user, "text": text,
                 "ts": ts or self.next_ts(), "channel_type": channel_type, **extra}  # fmt: skip
        if thread_ts:
            event["thread_ts"] = thread_ts
        return event

    def add_file(self, name: str, data: bytes, mimetype: str) -> dict[str, Any]:
        """A file shared in a message (the `files` entry of a `file_share` message)."""
        file_id = f"F{len(self.files) + 1:04d}"
        self.files[file_id] = (data, mimetype)
        url = f"{self.url}/files/{file_id}/{name}"
        return {"id": file_id, "name": name, "title": name, "mimetype": mimetype,
                "filetype": name.rpartition(".")[2], "size": len(data), "mode": "hosted",
                "url_private": url, "url_private_download": url + "?download=1"}  # fmt: skip

    # -- Web API -----------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params: dict[str, Any] = dict(request.query)
        if request.body_exists:
            if request.content_type == "application/json":
                params.update(await request.json())
            else:
                params.update(dict(await request.post()))
        token = _bearer(request)
        self.calls.append(Call(method, params, token))
        if request.transport is not None and request.transport not in self.api_connections:
            self.api_connections.append(request.transport)
        handler = getattr(self, "_" + method.replace(".", "_"), None)
        if handler is None:
            return web.json_response({"ok": False, "error": "unknown_method"})
        answer: dict[str, Any] = await handler(params, token)
        await self._notify()
        return web.json_response(answer)

    async def _auth_test(self, params: dict[str, Any], token: str | None) -> dict[str, Any]:
        if token != BOT_TOKEN:
            return {"ok": False, "error": "invalid_auth"}
        return {"ok": True, "url": "https://gsv-test.slack.com/", "team": "GSV Test",
                "user": BOT_NAME, "team_id": TEAM_ID, "user_id": BOT_USER_ID,
                "bot_id": "B0BOT", "is_enterprise_install": False}  # fmt: skip

    async def _apps_connections_open(
        self, params: dict[str, Any], token: str | None
    ) -> dict[str, Any]:
        if token == BOT_TOKEN:
            return {"ok": False, "error": "not_allowed_token_type"}
        if token != APP_TOKEN:
            return {"ok": False, "error": "invalid_auth"}
        ticket = uuid.uuid4().hex
        self._tickets.add(ticket)
        return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/link?ticket={ticket}"}

    async def _chat_postMessage(self, params: dict[str, Any], token: str | None) -> dict[str, Any]:
        if token != BOT_TOKEN:
            return {"ok": False, "error": "invalid_auth"}
        text = str(params.get("text") or "")
        if not text:
            return {"ok": False, "error": "no_text"}
        if len(text) > MAX_TEXT:
            return {"ok": False, "error": "msg_too_long"}
        if not str(params.get("channel", "")).startswith(("C", "D", "G")):
            return {"ok": False, "error": "channel_not_found"}
        ts = self.next_ts()
        self.posted.append({**params, "ts": ts})
        return {"ok": True, "channel": params["channel"], "ts": ts,
                "message": {"type": "message", "user": BOT_USER_ID, "text": text, "ts": ts}}  # fmt: skip

    async def _chat_update(self, params: dict[str, Any], token: str | None) -> dict[str, Any]:
        if token != BOT_TOKEN:
            return {"ok": False, "error": "invalid_auth"}
        found = next((m for m in self.posted
                      if (m["channel"], m["ts"]) == (params.get("channel"), params.get("ts"))),
                     None)  # fmt: skip
        if found is None:
            return {"ok": False, "error": "message_not_found"}
        if params.get("text"):
            found["text"] = params["text"]
        if "blocks" in params:  # left out: the blocks stay; [] removes them
            if params["blocks"]:
                found["blocks"] = params["blocks"]
            else:
                found.pop("blocks", None)
        return {"ok": True, "channel": found["channel"], "ts": found["ts"], "text": found["text"]}

    async def _chat_postEphemeral(
        self, params: dict[str, Any], token: str | None
    ) -> dict[str, Any]:
        if token != BOT_TOKEN:
            return {"ok": False, "error": "invalid_auth"}
        if not params.get("user") or not params.get("text"):
            return {"ok": False, "error": "invalid_arguments"}
        self.ephemeral.append(params)
        return {"ok": True, "message_ts": self.next_ts()}

    async def _users_info(self, params: dict[str, Any], token: str | None) -> dict[str, Any]:
        if token != BOT_TOKEN:
            return {"ok": False, "error": "invalid_auth"}
        user = USERS.get(str(params.get("user")))
        return {"ok": True, "user": user} if user else {"ok": False, "error": "user_not_found"}

    async def _file(self, request: web.Request) -> web.Response:
        token = _bearer(request)
        self.file_fetches.append(token)
        found = self.files.get(request.match_info["file_id"])
        if token != BOT_TOKEN:
            return web.Response(status=403, text="login required")
        if found is None:
            return web.Response(status=404, text="no such file")
        return web.Response(body=found[0], content_type=found[1])

    # -- Socket Mode ---------------------------------------------------------------------------

    async def _link(self, request: web.Request) -> web.StreamResponse:
        ticket = request.query.get("ticket", "")
        if ticket not in self._tickets:
            return web.Response(status=401, text="invalid ticket")
        self._tickets.discard(ticket)  # single use, as on Slack
        socket = web.WebSocketResponse(autoping=True)
        await socket.prepare(request)
        self._socket, self._transport = socket, request.transport
        await socket.send_str(json.dumps({
            "type": "hello", "num_connections": 1,
            "debug_info": {"host": "fake-slack", "approximate_connection_time": 18060},
            "connection_info": {"app_id": "A0001"},
        }))  # fmt: skip
        self.sessions += 1
        await self._notify()
        try:
            async for frame in socket:
                if frame.type == WSMsgType.TEXT:
                    envelope_id = json.loads(frame.data).get("envelope_id")
                    if envelope_id:
                        self.acks.append(envelope_id)
                        await self._notify()
        finally:
            if self._socket is socket:
                self._socket = self._transport = None
            await self._notify()
        return socket


def _bearer(request: web.Request) -> str | None:
    header = request.headers.get("Authorization", "")
    return header.removeprefix("Bearer ") if header.startswith("Bearer ") else None


@asynccontextmanager
async def fake_slack(port: int = 0) -> AsyncIterator[FakeSlack]:
    slack = FakeSlack(port)
    await slack.start()
    try:
        yield slack
    finally:
        await slack.close()
