"""`mcp.list|add|remove|test` on a real gateway with real MCP servers: a server added is
running and its tools are in tools.list; secrets in env and headers are kept in the
secret store and masked; bad input gets 400, unknown servers 404, a taken name 409."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from gsv_core.client import GatewayClient
from gsv_core.errors import GsvError
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from gsv_core.mcp.supervisor import READY
from tests.fakes.memory_keyring import MemoryKeyring
from tests.mcp.conftest import HttpServer
from tests.mcp.conftest import stdio


@pytest.fixture
async def client(gateway: RunningGateway) -> Any:
    async with GatewayClient(gateway.url, token=gateway.token) as connected:
        yield connected


async def tool_names(client: GatewayClient) -> list[str]:
    return [t["name"] for t in (await client.call("tools.list"))["tools"]]


async def test_an_added_server_runs_is_listed_tested_and_removed(client: GatewayClient) -> None:
    added = await client.call("mcp.add", {"name": "toy", **stdio()})
    assert added["state"] == "ready" and added["toolCount"] == 8
    assert added["transport"] == "stdio" and added["lastError"] is None
    judged = {t["name"]: (t["readOnly"], t["approval"]) for t in added["tools"]}
    assert judged["mcp_toy__read_note"] == (True, "allow")
    assert judged["mcp_toy__echo"] == judged["mcp_toy__write_note"] == (False, "ask")
    assert "mcp_toy__echo" in await tool_names(client)
    listed = await client.call("mcp.list")
    assert [(s["name"], s["state"], s["toolCount"]) for s in listed["servers"]] == [
        ("toy", "ready", 8)
    ]
    tested = await client.call("mcp.test", {"name": "toy"})
    offered = {t["name"]: t.get("offeredAs") for t in tested["tools"]}
    assert offered["echo"] == "mcp_toy__echo" and offered["bad.name"] is None
    assert tested["count"] == 9
    by_name = {t["name"]: t for t in tested["tools"]}
    assert by_name["weather"]["readOnly"] is True and by_name["weather"]["approval"] == "allow"
    assert by_name["hang"]["readOnly"] is False and by_name["hang"]["approval"] == "ask"
    assert by_name["bad.name"].get("approval") is None  # not offered: never called
    assert await client.call("mcp.remove", {"name": "toy"}) == {"ok": True, "name": "toy"}
    assert (await client.call("mcp.list"))["servers"] == []
    assert not [n for n in await tool_names(client) if n.startswith("mcp_")]


async def test_credentials_in_env_and_headers_live_in_the_secret_store_and_read_masked(
    http_server: HttpServer, client: GatewayClient, memory_keyring: MemoryKeyring
) -> None:
    await client.call(
        "mcp.add", {"name": "toy", **stdio(env={"API_TOKEN": "tok-123", "MODE": "x"})}
    )
    await client.call("mcp.add", {"name": "web", "url": http_server.url,
                                  "headers": {"Authorization": "Bearer abc-456"}})  # fmt: skip
    servers = {s["name"]: s for s in (await client.call("mcp.list"))["servers"]}
    # every env value reads masked, credential-looking or not (config.mask.mask_secrets)
    assert servers["toy"]["config"]["env"] == {"API_TOKEN": "***", "MODE": "***"}
    assert servers["web"]["config"]["headers"] == {"Authorization": "***"}
    assert servers["web"]["state"] == "ready" and servers["web"]["transport"] == "http"
    whole = await client.call("config.get", {"path": "mcp"})
    assert "tok-123" not in str(whole) and "abc-456" not in str(whole)
    stored = set(memory_keyring.store.values())
    assert {"tok-123", "Bearer abc-456"} <= stored


async def test_a_server_that_cannot_start_is_listed_with_its_error(
    client: GatewayClient, tmp_path: Path
) -> None:
    added = await client.call("mcp.add", {"name": "gone", "command": str(tmp_path / "nothing")})
    assert added["state"] == "failed" and "nothing" in added["lastError"]


BAD_ADDS = [
    ({"name": "two__parts", "command": "x"}, "no valid MCP server name"),
    ({"name": "a.b", "command": "x"}, "no valid MCP server name"),
    ({"name": "", "command": "x"}, "no valid MCP server name"),
    ({"name": "trailing_", "command": "x"}, "no valid MCP server name"),
    ({"name": "n" * 33, "command": "x"}, "no valid MCP server name"),
    ({"name": "ok"}, "needs a command (stdio) or a url (streamable HTTP)"),
    ({"name": "ok", "command": "x", "url": "http://127.0.0.1/mcp"}, "a command or a url, not both"),
    ({"name": "ok", "url": "ftp://example.com/mcp"}, "must be http:// or https://"),
    ({"name": "ok", "url": "file:///etc/passwd"}, "must be http:// or https://"),
    ({"name": "ok", "command": "x", "headers": {"A": "b"}}, "headers are for url servers"),
    ({"name": "ok", "command": "x", "timeoutMs": 1}, "timeoutMs"),
    ({"name": "ok", "command": ""}, "command"),
]


@pytest.mark.parametrize(("params", "message"), BAD_ADDS)
async def test_bad_servers_are_refused_with_400(
    client: GatewayClient, params: dict[str, Any], message: str
) -> None:
    with pytest.raises(GsvError) as raised:
        await client.call("mcp.add", params)
    assert raised.value.code == 400 and message in raised.value.message
    assert (await client.call("mcp.list"))["servers"] == []


@pytest.mark.parametrize("method", ["mcp.remove", "mcp.test"])
async def test_unknown_servers_are_404_and_bad_names_400(
    client: GatewayClient, method: str
) -> None:
    with pytest.raises(GsvError) as raised:
        await client.call(method, {"name": "nobody"})
    assert raised.value.code == 404 and "no MCP server named 'nobody'" in raised.value.message
    with pytest.raises(GsvError) as bad:
        await client.call(method, {"name": "../x"})
    assert bad.value.code == 400 and "no valid MCP server name" in bad.value.message


async def test_a_taken_name_is_409_unless_replaced(client: GatewayClient) -> None:
    await client.call("mcp.add", {"name": "toy", **stdio(enabled=False)})
    with pytest.raises(GsvError) as raised:
        await client.call("mcp.add", {"name": "toy", **stdio()})
    assert raised.value.code == 409
    replaced = await client.call("mcp.add", {"name": "toy", "replace": True, **stdio()})
    assert replaced["state"] == "ready"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_servers_start_with_the_gateway_and_stop_with_it(tmp_path: Path) -> None:
    config = ServerConfig(database=tmp_path / "gw" / "gsv.db")
    pid_file = tmp_path / "toy.pid"
    settings = stdio(env={"TOY_PID_FILE": str(pid_file)})
    async with (
        serve(config, port=0) as running,
        GatewayClient(running.url, token=running.token) as client,
    ):
        assert (await client.call("mcp.add", {"name": "toy", **settings}))["state"] == READY
    first = int(pid_file.read_text())
    assert not alive(first)  # stopped (and reaped) with the gateway
    async with serve(config, port=0) as running:
        state = await running.gateway.mcp.settle("toy")
        assert state is not None and state.state == READY
        second = int(pid_file.read_text())
        assert second != first and alive(second)
    assert not alive(second)
