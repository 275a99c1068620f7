"""Every frame gets an answer or a clear close: too deep, lone surrogates and NUL are
refused at the boundary, naming where; bad UTF-8 closes with 1007 and an oversize message
with 1009, and the gateway goes on serving; nothing stored breaks a later read. (The
fuzzer next door throws random mixes of these; here each case is named.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed

from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from tests.wire import handshake
from tests.wire import open_raw
from tests.wire import request

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


async def test_an_id_inside_params_does_not_take_the_answer(gateway: RunningGateway) -> None:
    """Too deep to parse: the error goes to the frame's own id, not to an "id" that a
    stranger's text inside params holds (nor one inside a string)."""
    async with await open_raw(gateway.url) as ws:
        await handshake(ws)
        deep = "[" * DEPTH + "]" * DEPTH
        params = '{"id":"spoof","note":"\\"id\\":\\"spoof2\\""}'
        await ws.send(f'{{"type":"req","method":"config.get","params":{params},'
                      f'"id":"real","x":{deep}}}')  # fmt: skip
        reply = json.loads(await ws.recv())
    assert reply["id"] == "real" and reply["error"]["code"] == 400


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


@pytest.mark.parametrize(
    ("params", "where"),
    [
        ({"tool": "n1__Bash", "args": {"command": "echo a\x00b"}}, "params.args.command"),
        ({"tool": "n1__Bash", "args": {"\udc80": "x"}}, "params.args.(key)"),
        ({"tool": "n1__Bash", "args": {"list": ["ok", "nul\x00"]}}, "params.args.list.1"),
    ],
    ids=["NUL in a tool argument", "surrogate key", "NUL in a list"],
)
async def test_bad_text_in_a_tool_call_is_a_400_naming_the_field(
    gateway: RunningGateway, params: dict[str, object], where: str
) -> None:
    """The original answered a NUL in a tool argument with "internal error"."""
    async with await open_raw(gateway.url) as ws:
        await handshake(ws)
        reply = await request(ws, "tool.invoke", params)
    assert reply["error"]["code"] == 400
    assert reply["error"]["message"].startswith(f"{where}: text with a NUL character")


async def test_bad_utf8_closes_with_1007_and_the_gateway_serves_on(
    gateway: RunningGateway,
) -> None:
    async with await open_raw(gateway.url) as ws:
        await handshake(ws)
        await ws.send(
            b'{"type":"req","id":"u","method":"config.get","params":"\xc3\x28"}', text=True
        )
        with pytest.raises(ConnectionClosed) as closed:
            await ws.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1007
    async with await open_raw(gateway.url) as ws:
        await handshake(ws)
        assert (await request(ws, "config.get", {"path": "model.id"}))["ok"]


async def test_a_message_over_max_size_closes_with_1009_and_the_gateway_serves_on(
    tmp_path: Path,
) -> None:
    """The server's max_size is explicit; a bigger message closes with 1009 (message too
    big), whatever it holds; other connections are not affected."""
    config = ServerConfig(database=tmp_path / "g.db", max_size=4096)
    async with serve(config, port=0) as running, await open_raw(running.url) as bystander:
        await handshake(bystander)
        async with await open_raw(running.url, max_size=None) as ws:
            await handshake(ws)
            big = {
                "type": "req",
                "id": "big",
                "method": "config.get",
                "params": {"x": "a" * 10_000},
            }
            await ws.send(json.dumps(big))
            with pytest.raises(ConnectionClosed) as closed:
                await ws.recv()
        assert (await request(bystander, "config.get", {"path": "model.id"}))["ok"]
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1009
