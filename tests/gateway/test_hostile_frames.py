"""Every frame gets an answer or a clear close: too deep, lone surrogates and
NUL are refused at the boundary, naming where; nothing stored breaks a later read."""

from __future__ import annotations

import json

import pytest
from websockets.exceptions import ConnectionClosed

from gsv_core.gateway.server import RunningGateway
from tests.wire import handshake, open_raw, request

DEPTH = 100_000


async def test_a_deeply_nested_frame_is_answered(gateway: RunningGateway) -> None:
    async with await open_raw(gateway.url) as ws:
        await handshake(ws)
        deep = "[" * DEPTH + "]" * DEPTH
        await ws.send(f'{{"type":"req","id":"deep","method":"config.get","params":{deep}}}')
        reply = json.loads(await ws.recv())
        assert reply["id"] == "deep" and reply["error"]["code"] == 400
        assert "nested too deeply" in reply["error"]["message"]
        assert (await request(ws, "config.get", {"path": "model.id"}))["ok"]


async def test_a_deep_frame_without_a_readable_id_is_closed_with_1007(
    gateway: RunningGateway,
) -> None:
    async with await open_raw(gateway.url) as ws:
        await handshake(ws)
        await ws.send("[" * DEPTH + "]" * DEPTH)
        with pytest.raises(ConnectionClosed) as closed:
            await ws.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1007


@pytest.mark.parametrize(
    ("value", "where"),
    [("a\\ud800b", "params.value"), ("nul\\u0000here", "params.value")],
    ids=["lone surrogate", "NUL"],
)
async def test_bad_text_is_refused_naming_the_field_and_nothing_is_stored(
    gateway: RunningGateway, value: str, where: str
) -> None:
    async with await open_raw(gateway.url) as ws:
        await handshake(ws)
        params = f'{{"path":"systemPrompt","value":"{value}"}}'
        await ws.send(f'{{"type":"req","id":"s","method":"config.set","params":{params}}}')
        reply = json.loads(await ws.recv())
        assert reply["error"]["code"] == 400 and reply["error"]["message"].startswith(where)
        got = await request(ws, "config.get", {"path": "systemPrompt"})  # reads still work
        assert got["ok"] and "value" not in got["payload"]


async def test_a_request_id_with_a_lone_surrogate_is_closed_with_1007(
    gateway: RunningGateway,
) -> None:
    async with await open_raw(gateway.url) as ws:
        await handshake(ws)
        await ws.send('{"type":"req","id":"x\\udc00","method":"config.get"}')
        with pytest.raises(ConnectionClosed) as closed:
            await ws.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1007


async def test_real_emoji_escaped_as_surrogate_pairs_are_fine(gateway: RunningGateway) -> None:
    async with await open_raw(gateway.url) as ws:
        await handshake(ws)
        params = json.dumps({"path": "systemPrompt", "value": "be kind 😀"})  # \ud83d\ude00
        assert "\\ud83d" in params
        await ws.send(f'{{"type":"req","id":"e","method":"config.set","params":{params}}}')
        assert json.loads(await ws.recv())["ok"]
        got = await request(ws, "config.get", {"path": "systemPrompt"})
        assert got["payload"]["value"] == "be kind 😀"


@pytest.mark.parametrize("method", ["cron.status", "nodes.list", "auth.list", "config.get"])
async def test_params_that_are_not_an_object_are_refused(
    gateway: RunningGateway, method: str
) -> None:
    async with await open_raw(gateway.url) as ws:
        await handshake(ws)
        reply = await request(ws, method, 5)
        assert reply["error"]["code"] == 400 and "params" in reply["error"]["message"]
        assert (await request(ws, method, {}))["ok"]
