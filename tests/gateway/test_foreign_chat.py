"""`chat.send` as a client written for the original sees it: `queued` only when the
message waits behind a run. Frames are built by hand, as a foreign client builds them."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from websockets.asyncio.client import ClientConnection

from tests.fakes.provider import FakeProvider
from tests.wire import request


async def run_end(ws: ClientConnection, run_id: str) -> dict[str, Any]:
    """The `chat` event that ends run `run_id`, as an old client waits for it."""
    while True:
        frame = json.loads(await ws.recv())
        payload = frame.get("payload") or {}
        ours = frame.get("event") == "chat" and payload.get("runId") == run_id
        if ours and payload["state"] in ("final", "error"):
            return dict(payload)


async def test_a_message_that_starts_a_run_has_no_queued_keys(
    owner: ClientConnection, fake: FakeProvider
) -> None:
    """An idle session: `{status: started, runId}` and nothing about a queue."""
    fake.enqueue("Hello")
    reply = await request(owner, "chat.send", {"sessionKey": "main", "message": "hi"})
    assert reply["ok"], reply
    assert set(reply["payload"]) == {"status", "runId"}
    assert reply["payload"]["status"] == "started"
    assert (await run_end(owner, reply["payload"]["runId"]))["state"] == "final"


async def test_a_message_behind_a_run_says_queued_with_its_position(
    owner: ClientConnection, fake: FakeProvider
) -> None:
    """A busy session: the second and third messages are queued at 1 and 2."""
    gate = asyncio.Event()
    fake.enqueue("working...", gate)
    first = await request(owner, "chat.send", {"sessionKey": "main", "message": "one"})
    await fake.streaming.wait()
    replies = [
        (await request(owner, "chat.send", {"sessionKey": "main", "message": text}))["payload"]
        for text in ("two", "three")
    ]
    assert "queued" not in first["payload"]
    assert [(r["status"], r["queued"], r["queuePosition"]) for r in replies] == [
        ("started", True, 1),
        ("started", True, 2),
    ]
    gate.set()
    for reply in replies:
        assert (await run_end(owner, reply["runId"]))["state"] == "final"
