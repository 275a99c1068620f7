"""Strangers cannot slow the owner, over a real external-adapter socket: 20 unknown
senders write at once, then the owner; the owner's reply goes out while the strangers'
pairing prompts still wait on their own rate-limit lane. (No clock: the facts asserted
are the order of what the adapter receives. With one send a minute, a shared lane would
hold the owner's reply for 20 minutes.) The in-process adapter's twin of this test is in
tests/channels/test_pipeline.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gsv_core.client import GatewayClient
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from tests.fakes.provider import FakeProvider
from tests.wire import handshake
from tests.wire import open_raw

STRANGERS = 20


def inbound(sender: str, message_id: str, text: str) -> dict[str, Any]:
    return {
        "type": "req",
        "id": message_id,
        "method": "channel.inbound",
        "params": {
            "channel": "ext", "accountId": "a1", "peer": {"kind": "dm", "id": sender},
            "sender": {"id": sender}, "message": {"id": message_id, "text": text},
        },
    }  # fmt: skip


async def test_twenty_strangers_at_once_do_not_hold_up_the_owners_reply(tmp_path: Path) -> None:
    fake = FakeProvider()
    fake.enqueue("hello, owner")
    config = ServerConfig(database=tmp_path / "gw" / "gsv.db", provider_factory=fake.factory)
    async with serve(config, port=0) as gw, GatewayClient(gw.url, token=gw.token) as client:
        settings = {"dmPolicy": "pairing", "allowFrom": ["owner"], "sendRatePerMinute": 1}
        await client.call("config.set", {"path": "channels.ext", "value": settings})
        async with await open_raw(gw.url) as ws:
            await handshake(ws, mode="channel", client_id="bridge", channel="ext", account_id="a1")
            # every message is written before any answer is read: they arrive at once
            for n in range(STRANGERS):
                await ws.send(json.dumps(inbound(f"stranger{n}", f"s{n}", "let me in")))
            await ws.send(json.dumps(inbound("owner", "o1", "status?")))
            answered: dict[str, str] = {}
            sent_to: list[str] = []  # the peers of channel.outbound, in the order sent
            while "owner" not in sent_to or len(answered) < STRANGERS + 1:
                frame = json.loads(await ws.recv())
                if frame.get("type") == "res":
                    answered[frame["id"]] = frame["payload"]["status"]
                elif frame.get("event") == "channel.outbound":
                    sent_to.append(frame["payload"]["peer"]["id"])
        pairs = (await client.call("pair.list"))["pairs"]
    assert answered == {"o1": "started", **{f"s{n}": "pending_pairing" for n in range(STRANGERS)}}
    # one prompt a minute on the strangers' lane: at most one went out before the owner's
    # reply, which the owner's own lane sent at once
    assert sent_to[-1] == "owner" and len(sent_to) <= 2
    assert len(pairs) == STRANGERS
