"""The external channel protocol end to end with the example adapter of docs/channels.md
(`examples/http_channel.py`, a worker written the way the original's are): commands
answered through it, a cron job and `gsv__Message` delivering to it."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection

from gsv_core.gateway.server import RunningGateway
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.wire import credential
from tests.wire import request

EXAMPLE = Path(__file__).parents[2] / "examples" / "http_channel.py"


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("http_channel_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def http(method: str, url: str, body: dict[str, Any] | None = None) -> Any:
    """One request to the example's HTTP side (blocking: run it in a thread)."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    with urllib.request.urlopen(req, timeout=60) as response:
        return json.loads(response.read())


class Running:
    def __init__(self, adapter: Any, port: int) -> None:
        self.adapter, self.base = adapter, f"http://127.0.0.1:{port}"

    async def write(self, peer: str, text: str) -> Any:
        """Someone writes to the channel (through its HTTP side)."""
        return await asyncio.to_thread(
            http, "POST", f"{self.base}/inbound", {"peer": peer, "text": text}
        )

    async def messages(self) -> Any:
        return await asyncio.to_thread(http, "GET", f"{self.base}/messages")


@pytest.fixture
async def channel(gw: RunningGateway, owner: ClientConnection) -> AsyncIterator[Running]:
    policy = {"path": "channels.httptest", "value": {"dmPolicy": "open"}}
    assert (await request(owner, "config.set", policy))["ok"]
    adapter = load_example().HttpTestChannel(gw.url, await credential(gw, "channel", "httptest"))
    port: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(adapter.run(0, port.set_result))
    yield Running(adapter, await port)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_help_and_status_are_answered_through_the_adapter(channel: Running) -> None:
    """/help and /status come back as channel.outbound replies to the message."""
    for count, command in enumerate(("/help", "/status"), start=1):
        answer = await channel.write("alice", command)
        assert answer["status"] == "command"
        [*_, reply] = await channel.adapter.wait_for(count)
        assert reply["peer"] == "alice" and reply["text"]
    replies = await channel.messages()
    assert "/status" in replies[0]["text"]  # the help lists the commands
    assert replies[1]["text"] != replies[0]["text"]


async def test_link_previews_reach_the_adapter_only_when_turned_on(
    channel: Running, owner: ClientConnection
) -> None:
    """Off by default (the field is absent); `channels.httptest.linkPreviews true` says so
    in the next reply's event."""
    await channel.write("alice", "/help")
    [first] = await channel.adapter.wait_for(1)
    assert "linkPreviews" not in first
    on = {"path": "channels.httptest.linkPreviews", "value": True}
    assert (await request(owner, "config.set", on))["ok"]
    await channel.write("alice", "/help")
    [_, second] = await channel.adapter.wait_for(2)
    assert second["linkPreviews"] is True


async def test_a_cron_job_delivers_to_the_adapter(
    channel: Running, owner: ClientConnection, fake: FakeProvider
) -> None:
    """A task job with channel + to sends its reply to that peer through the adapter."""
    fake.enqueue("The nightly report.")
    job = {"name": "report", "schedule": {"kind": "every", "everyMs": 86_400_000},
           "spec": {"mode": "task", "message": "report", "channel": "httptest", "to": "bob"}}  # fmt: skip
    added = await request(owner, "cron.add", job)
    assert added["ok"], added
    ran = await request(owner, "cron.run", {"id": added["payload"]["job"]["id"], "mode": "force"})
    assert ran["payload"]["ran"] == 1
    [delivered] = await channel.adapter.wait_for(1)
    assert delivered == {"peer": "bob", "text": "The nightly report."}


async def test_the_message_tool_writes_to_the_conversation_the_run_came_from(
    channel: Running, fake: FakeProvider
) -> None:
    """gsv__Message without channel/to goes to the adapter's peer, then the final reply."""
    fake.enqueue(call("gsv__Message", {"text": "a side note"}))
    fake.enqueue("done")
    answer = await channel.write("carol", "ping me")
    assert answer["status"] == "started"
    sent = await channel.adapter.wait_for(2)
    assert [(m["peer"], m["text"]) for m in sent] == [("carol", "a side note"), ("carol", "done")]
    assert await channel.messages() == sent


async def test_the_adapter_is_listed_and_lifecycle_methods_name_it_unknown(
    channel: Running, owner: ClientConnection
) -> None:
    """channels.list and channel.status show the worker; start/stop/login/logout manage
    in-process adapters only, so for a worker's channel they answer 404 as the original."""
    listed = (await request(owner, "channels.list", {}))["payload"]["channels"]
    assert {"channel": "httptest", "accountId": "default", "mode": "websocket"}.items() <= (
        listed[0].items()
    )
    status = (await request(owner, "channel.status", {"channel": "httptest"}))["payload"]
    assert [(a["accountId"], a["connected"], a["mode"]) for a in status["accounts"]] == [
        ("default", True, "websocket")
    ]
    for method in ("channel.start", "channel.stop", "channel.login", "channel.logout"):
        error = (await request(owner, method, {"channel": "httptest"}))["error"]
        assert (error["code"], error["message"]) == (404, "Unknown channel: httptest"), method
