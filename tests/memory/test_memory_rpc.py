"""memory.search, memory.reindex and memory.status through a real gateway: the owner's
search sees every note and session; bad params are 400s that say what is wrong; a socket
that has not connected, or a node, is refused like on every other method."""

from __future__ import annotations

from typing import Any

import pytest

from gsv_core.client import GatewayClient
from gsv_core.errors import InvalidParams
from gsv_core.gateway.server import RunningGateway
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.wire import credential
from tests.wire import handshake
from tests.wire import open_raw
from tests.wire import request

TOOLS = [{"name": "Read", "description": "Read a file", "inputSchema": {"type": "object"}}]


async def test_the_owner_searches_notes_and_sessions(client: GatewayClient, log: EventLog) -> None:
    """A hit from a session and one from a note, each saying where it came from."""
    await client.call(
        "workspace.write", {"path": "memory/cars.md", "content": "Volvo service in June\n"}
    )
    await log.ended((await send(client, "book the volvo service", key="agent:main:dm:x"))["runId"])
    found = await client.call("memory.search", {"query": "volvo"})
    assert found["count"] == 2
    assert {h["source"] for h in found["results"]} == {"note", "session"}
    notes = await client.call("memory.search", {"query": "volvo", "scope": "notes"})
    assert [h["path"] for h in notes["results"]] == ["memory/cars.md"]
    none = await client.call("memory.search", {"query": "volvo", "since": "2999-01-01"})
    assert none == {"results": [], "count": 0}


async def test_reindex_and_status(client: GatewayClient, gw: RunningGateway) -> None:
    """reindex starts a build; status reports it, and what the index holds once done."""
    await client.call("workspace.write", {"path": "MEMORY.md", "content": "x\n"})
    started = await client.call("memory.reindex")
    assert started["state"] == "building"
    await gw.gateway.memory.wait_built()
    status = await client.call("memory.status")
    assert status["state"] == "ready" and status["notes"] >= 1 and status["bytes"] > 0
    overview = await client.call("gateway.status")
    assert overview["memory"] == {"state": "ready", "done": 0, "total": 0}


@pytest.mark.parametrize(
    ("params", "said"),
    [
        ({}, "query"),
        ({"query": ""}, "query"),
        ({"query": 42}, "query"),
        ({"query": "?? --"}, "no words"),
        ({"query": "x" * 1001}, "query"),
        ({"query": "x", "scope": "mine"}, "scope"),
        ({"query": "x", "since": "soon"}, "since 'soon' is not a time"),
        ({"query": "x", "until": "2026-02-30"}, "until"),
        ({"query": "x", "since": "2026-02-01", "until": "2026-01-01"}, "since is after until"),
        ({"query": "x", "limit": 51}, "limit"),
    ],
)
async def test_bad_search_params_are_invalid_params(
    client: GatewayClient, params: dict[str, Any], said: str
) -> None:
    """The protocol's 400, naming the problem."""
    with pytest.raises(InvalidParams, match=said):
        await client.call("memory.search", params)


async def test_memory_methods_need_a_connected_client(gw: RunningGateway) -> None:
    """Not connected: 101; a node's connection: 403."""
    async with await open_raw(gw.url) as ws:
        for method in ("memory.search", "memory.status", "memory.reindex"):
            reply = await request(ws, method, {"query": "x"})
            assert reply["error"]["code"] == 101
    token = await credential(gw, "node", "laptop")
    async with await open_raw(gw.url) as ws:
        await handshake(ws, mode="node", client_id="laptop", tools=TOOLS, token=token)
        reply = await request(ws, "memory.search", {"query": "x"})
        assert reply["error"]["code"] == 403


@pytest.mark.parametrize("entry", ["/etc/passwd", "../other/x.md", "a/../../b", "~/x", "", "a\\b"])
async def test_memory_notes_outside_the_agent_folder_are_refused(
    client: GatewayClient, entry: str
) -> None:
    """memory.notes takes paths inside the agent's folder only."""
    with pytest.raises(InvalidParams, match="inside the agent's folder"):
        await client.call("config.set", {"path": "memory.notes", "value": [entry]})


async def test_memory_notes_add_files_to_search(client: GatewayClient) -> None:
    """A listed path is a note at the next search."""
    await client.call("config.set", {"path": "memory.notes", "value": ["journal/*.txt"]})
    await client.call("workspace.write", {"path": "journal/mon.txt", "content": "ate a quince\n"})
    found = await client.call("memory.search", {"query": "quince"})
    assert [h["path"] for h in found["results"]] == ["journal/mon.txt"]


@pytest.mark.parametrize(
    "value",
    [
        {"baseUrl": "ftp://x/v1", "model": "m"},
        {"baseUrl": "", "model": "m"},
        {"baseUrl": "http://127.0.0.1:1/v1"},
        {"baseUrl": "http://127.0.0.1:1/v1", "model": "m", "extra": 1},
        "http://127.0.0.1:1/v1",
    ],
)
async def test_bad_embeddings_settings_are_refused(client: GatewayClient, value: object) -> None:
    """memory.embeddings needs an http(s) baseUrl and a model, nothing else."""
    with pytest.raises(InvalidParams):
        await client.call("config.set", {"path": "memory.embeddings", "value": value})


async def test_the_embeddings_key_is_masked(client: GatewayClient) -> None:
    """memory.embeddings.apiKey is a secret: config.get shows it masked."""
    value = {"baseUrl": "http://127.0.0.1:1/v1", "model": "m", "apiKey": "sk-very-secret"}
    await client.call("config.set", {"path": "memory.embeddings", "value": value})
    shown = await client.call("config.get", {"path": "memory.embeddings"})
    assert "sk-very-secret" not in str(shown)
