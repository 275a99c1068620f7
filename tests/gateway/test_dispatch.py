"""Dispatch rules (docs/protocol.md#methods) and connection behaviour on a live gateway."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

from gsv_core.errors import Conflict
from gsv_core.gateway.server import RunningGateway
from gsv_core.protocol import methods as m
from gsv_core.rpc.context import RequestContext
from tests.wire import handshake
from tests.wire import open_raw
from tests.wire import request

NODE_TOOLS = [{"name": "Bash", "description": "run", "inputSchema": {}}]


def test_the_mode_table_restricts_what_the_issue_names() -> None:
    """Client requests are client-only, node replies node-only, channel.inbound channel-only,
    following each method's direction (the original let nodes and channels call client methods)."""
    client_only = {
        m.CONFIG_SET, m.PAIR_LIST, m.PAIR_APPROVE, m.PAIR_REJECT, m.NODE_FORGET,
        m.SESSION_PATCH, m.SESSION_RESET, m.SESSION_COMPACT,
        m.CRON_ADD, m.CRON_UPDATE, m.CRON_REMOVE, m.CRON_RUN,
        m.TOOL_INVOKE, m.TOOL_REQUEST, m.LOGS_GET,
    }  # fmt: skip
    for name in client_only:
        assert m.METHODS[name].modes == {m.CLIENT}, name
    for name in (m.TOOL_RESULT, m.LOGS_RESULT, m.NODE_EXEC_EVENT, m.NODE_PROBE_RESULT):
        assert m.METHODS[name].modes == {m.NODE}, name
    assert m.METHODS[m.CHANNEL_INBOUND].modes == {m.CHANNEL}
    assert m.METHODS[m.TOOLS_LIST].modes == m.ALL_MODES  # nodes use it as keepalive
    for name in (m.CONFIG_GET, m.SESSION_GET, m.SESSIONS_LIST, m.WORKSPACE_READ, m.CRON_LIST):
        assert m.METHODS[name].modes == {m.CLIENT}, f"{name}: a node must not read it"
    assert not m.METHODS[m.CONNECT].needs_connect


async def test_unknown_methods_get_404_naming_the_method(gateway: RunningGateway) -> None:
    """A connected peer calling an unknown method gets 404 "Unknown method: x"."""
    async with await open_raw(gateway.url) as ws:
        await handshake(ws)
        reply = await request(ws, "no.such")
    assert reply["error"] == {"code": 404, "message": "Unknown method: no.such"}


@pytest.mark.parametrize(("mode", "extra"), [("node", {"tools": NODE_TOOLS}), ("channel", {})])
async def test_methods_outside_the_callers_mode_get_403(
    gateway: RunningGateway, mode: str, extra: dict[str, Any]
) -> None:
    """A node or channel may not call config.set (nor read config); the value stays unchanged."""
    async with await open_raw(gateway.url) as ws:
        channel = "test" if mode == "channel" else None
        before = gateway.token
        await handshake(ws, mode=mode, channel=channel, **extra)
        reply = await request(ws, "config.set", {"path": "auth.token", "value": "stolen"})
        assert reply["error"] == {"code": 403, "message": "Method config.set not allowed for mode"}
        reply = await request(ws, "config.get", {"path": "auth.token"})
        assert reply["error"]["code"] == 403
    assert gateway.gateway.config.auth_token == before


async def test_params_failing_validation_get_400_naming_the_field(gateway: RunningGateway) -> None:
    """config.set without a path, or with a path of the wrong type, is 400 with details."""
    async with await open_raw(gateway.url) as ws:
        await handshake(ws)
        missing = await request(ws, "config.set", {"value": 1})
        wrong = await request(ws, "config.get", {"path": 12})
        not_object = await request(ws, "config.get", [1, 2])
    assert missing["error"]["code"] == 400
    assert "path" in missing["error"]["message"]
    assert missing["error"]["details"]["errors"][0]["field"] == "path"
    assert wrong["error"]["code"] == 400
    assert not_object["error"]["code"] == 400


async def test_handler_errors_keep_their_code_and_other_exceptions_become_500(
    gateway: RunningGateway, caplog: pytest.LogCaptureFixture
) -> None:
    """A GsvError keeps its code; a crash is "internal error" with the traceback only in the log."""

    async def conflict(ctx: RequestContext, params: Any) -> None:
        raise Conflict("node n is still connected")

    async def crash(ctx: RequestContext, params: Any) -> None:
        raise RuntimeError("secret internals /etc/passwd")

    gateway.gateway.router.add(m.CRON_STATUS, conflict, replace=True)
    gateway.gateway.router.add(m.CRON_LIST, crash, replace=True)
    async with await open_raw(gateway.url) as ws:
        await handshake(ws)
        with caplog.at_level(logging.ERROR):
            conflicted = await request(ws, m.CRON_STATUS)
            crashed = await request(ws, m.CRON_LIST)
    assert conflicted["error"] == {"code": 409, "message": "node n is still connected"}
    assert crashed["error"] == {"code": 500, "message": "internal error"}
    assert "secret internals" not in json.dumps(crashed)
    assert "secret internals" in caplog.text


async def test_a_slow_method_does_not_block_other_requests(gateway: RunningGateway) -> None:
    """Each request runs in its own task: config.get answers while another call waits."""
    release = asyncio.Event()

    async def slow(ctx: RequestContext, params: Any) -> dict[str, bool]:
        await release.wait()
        return {"slow": True}

    gateway.gateway.router.add(m.CRON_STATUS, slow, replace=True)
    async with await open_raw(gateway.url) as ws:
        await handshake(ws)
        await ws.send(json.dumps({"type": "req", "id": "slow", "method": m.CRON_STATUS}))
        fast = await request(ws, "config.get", {"path": "model.provider"}, frame_id="fast")
        assert fast["payload"]["value"] == "anthropic"
        release.set()
        slow_reply = json.loads(await ws.recv())
    assert slow_reply == {"type": "res", "id": "slow", "ok": True, "payload": {"slow": True}}


@pytest.mark.parametrize(
    "junk",
    [
        "{not json",
        "[]",
        '{"type":"bogus"}',
        '{"type":"res","id":"x","ok":true}',
        '{"type":"evt","event":"chat"}',
    ],
)
async def test_junk_frames_are_ignored_and_the_connection_stays_open(
    gateway: RunningGateway, junk: str
) -> None:
    """Invalid JSON, unknown types and peer res/evt frames get no reply and no disconnect."""
    async with await open_raw(gateway.url) as ws:
        await handshake(ws)
        await ws.send(junk)
        reply = await request(ws, "config.get", {"path": "userTimezone"}, frame_id="after")
    assert reply["payload"] == {"path": "userTimezone", "value": "UTC"}


async def test_a_req_with_an_id_but_a_bad_shape_gets_a_400(gateway: RunningGateway) -> None:
    """A req with a usable id but no method is answered with 400 under that id."""
    async with await open_raw(gateway.url) as ws:
        await ws.send(json.dumps({"type": "req", "id": "bad-1", "method": 5}))
        reply = json.loads(await ws.recv())
    assert reply["id"] == "bad-1"
    assert reply["ok"] is False
    assert reply["error"]["code"] == 400


async def test_events_carry_a_per_connection_increasing_seq(gateway: RunningGateway) -> None:
    """Events to one connection are numbered 1, 2, 3 ... (the `seq` of docs/protocol.md#frames)."""
    async with await open_raw(gateway.url) as ws:
        await handshake(ws, client_id="seq-client")
        peer = gateway.gateway.registry.clients["seq-client"]
        for n in range(3):
            peer.send_event("chat", {"n": n})
        frames = [json.loads(await ws.recv()) for _ in range(3)]
    assert [f["seq"] for f in frames] == [1, 2, 3]
    assert [f["payload"]["n"] for f in frames] == [0, 1, 2]


async def test_binary_frames_from_anyone_without_a_transfer_are_dropped(
    gateway: RunningGateway,
) -> None:
    """Binary frames before connect, or for unknown transfers, are dropped; the socket lives."""
    async with await open_raw(gateway.url) as ws:
        await ws.send(b"\x01\x00\x00\x00chunk")
        await ws.send(b"\x01")
        await handshake(ws)
        await ws.send(b"\x02\x00\x00\x00chunk")
        reply = await request(ws, "config.get", {"path": "userTimezone"})
    assert reply["ok"]


async def test_a_peer_may_connect_again_on_the_same_socket(gateway: RunningGateway) -> None:
    """Re-sending connect re-registers the socket under its new id."""
    async with await open_raw(gateway.url) as ws:
        await handshake(ws, client_id="first")
        await handshake(ws, client_id="second")
        assert list(gateway.gateway.registry.clients) == ["second"]
