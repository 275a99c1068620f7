"""A channel adapter that runs outside the gateway, as the original's channel workers do
(docs/channels.md): it connects in `mode: "channel"`, forwards what people write with
`channel.inbound`, and records every `channel.outbound` and `channel.typing` event.

Its "messenger" is a local HTTP test channel, like the original's test channel:

    POST /inbound   {"peer": "alice", "text": "hi", "id": "m1"?}  -> the gateway's answer
    GET  /messages  -> every outbound message so far:
                       [{"peer", "text", "replyToId"?, "linkPreviews"?}]

Run it with the channel credential (docs/channels.md: `gsv channels invite httptest`):

    python examples/http_channel.py --url ws://127.0.0.1:8787/ws --token gsv_ch_... --port 8790
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect


class HttpTestChannel:
    def __init__(self, url: str, token: str, channel: str = "httptest") -> None:
        self.url, self.token, self.channel, self.account = url, token, channel, "default"
        self.outbound: list[dict[str, Any]] = []  # what the gateway asked us to deliver
        self.typing: list[dict[str, Any]] = []
        self._changed = asyncio.Condition()
        self._ids = itertools.count(1)
        self._answers: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._ws: ClientConnection | None = None

    async def run(self, port: int = 0, started: Callable[[int], None] | None = None) -> None:
        """Connect, serve HTTP on `port` (0: any free one, passed to `started`), run until
        the gateway closes the connection or the task is cancelled."""
        async with connect(self.url, compression=None, proxy=None) as ws:
            self._ws = ws
            reader = asyncio.create_task(self._read(ws))
            client = {"id": f"{self.channel}-worker", "mode": "channel",
                      "channel": self.channel, "accountId": self.account}  # fmt: skip
            await self.call("connect", {"minProtocol": 1, "client": client,
                                        "auth": {"token": self.token}})  # fmt: skip
            server = ThreadingHTTPServer(
                ("127.0.0.1", port), _handler(self, asyncio.get_running_loop())
            )
            threading.Thread(target=server.serve_forever, daemon=True).start()
            if started is not None:
                started(server.server_port)
            try:
                await reader
            finally:
                server.shutdown()
                server.server_close()

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """One request to the gateway; its payload, or RuntimeError with the error shape."""
        assert self._ws is not None
        frame_id = str(next(self._ids))
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._answers[frame_id] = answer
        await self._ws.send(json.dumps({"type": "req", "id": frame_id, "method": method,
                                        "params": params}))  # fmt: skip
        return await answer

    async def inbound(self, peer: str, text: str, message_id: str | None = None) -> dict[str, Any]:
        """Someone wrote `text` to us from `peer` (a direct message)."""
        return await self.call("channel.inbound", {
            "channel": self.channel, "accountId": self.account,
            "peer": {"kind": "dm", "id": peer}, "sender": {"id": peer},
            "message": {"id": message_id or f"m{next(self._ids)}", "text": text},
        })  # fmt: skip

    async def wait_for(self, count: int) -> list[dict[str, Any]]:
        """The outbound messages, once there are at least `count`."""
        async with self._changed:
            await self._changed.wait_for(lambda: len(self.outbound) >= count)
            return list(self.outbound)

    async def _read(self, ws: ClientConnection) -> None:
        async for raw in ws:
            frame = json.loads(raw)
            if frame.get("type") == "res" and frame.get("id") in self._answers:
                answer = self._answers.pop(frame["id"])
                if frame.get("ok"):
                    answer.set_result(frame.get("payload") or {})
                else:
                    answer.set_exception(RuntimeError(json.dumps(frame.get("error"))))
            elif frame.get("type") == "evt":
                await self._event(frame["event"], frame.get("payload") or {})

    async def _event(self, name: str, payload: dict[str, Any]) -> None:
        if name == "channel.typing":
            self.typing.append(payload)
        elif name == "channel.outbound":  # a real adapter would deliver it to the messenger
            message = {"peer": payload["peer"]["id"], "text": payload["message"]["text"]}
            if payload["message"].get("replyToId"):
                message["replyToId"] = payload["message"]["replyToId"]
            if payload["message"].get("linkPreviews"):  # else: deliver without previews
                message["linkPreviews"] = True
            async with self._changed:
                self.outbound.append(message)
                self._changed.notify_all()


def _handler(channel: HttpTestChannel, loop: asyncio.AbstractEventLoop) -> type:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path != "/messages":
                return self._reply(404, {})
            return self._reply(200, channel.outbound)

        def do_POST(self) -> None:
            if self.path != "/inbound":
                return self._reply(404, {})
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            sent = channel.inbound(str(body["peer"]), str(body["text"]), body.get("id"))
            try:
                self._reply(200, asyncio.run_coroutine_threadsafe(sent, loop).result(60))
            except RuntimeError as exc:
                self._reply(400, {"error": json.loads(str(exc))})

        def _reply(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

    return Handler


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="ws://127.0.0.1:8787/ws")
    parser.add_argument("--token", required=True, help="a channel credential for --channel")
    parser.add_argument("--channel", default="httptest")
    parser.add_argument("--port", type=int, default=8790)
    args = parser.parse_args()
    adapter = HttpTestChannel(args.url, args.token, args.channel)
    asyncio.run(adapter.run(args.port, lambda port: print(f"listening on 127.0.0.1:{port}")))
