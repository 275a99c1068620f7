"""A client or node written for the original connects with the original's minimal frames:
every frame here is built by hand, as a foreign peer builds it (docs/protocol.md#connect)."""

from __future__ import annotations

from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection

from gsv_core.gateway.server import RunningGateway
from tests.wire import credential
from tests.wire import open_raw
from tests.wire import owner_token
from tests.wire import request

SHELL = {"hostCapabilities": ["shell.exec"]}
OWNER_FRAME = {"minProtocol": 1, "client": {"id": "old-cli", "mode": "client"}}


def owner_auth() -> dict[str, Any]:
    return {"auth": {"token": owner_token()}}


async def foreign_socket(gateway: RunningGateway) -> ClientConnection:
    return await open_raw(gateway.url)


def node_frame(node_id: str, tool: str, token: str) -> dict[str, Any]:
    """The smallest connect a node of the original sends: no version, platform or maxProtocol."""
    return {
        "minProtocol": 1,
        "client": {"id": node_id, "mode": "node"},
        "tools": [{"name": tool, "description": "d", "inputSchema": {"type": "object"}}],
        "nodeRuntime": {**SHELL, "toolCapabilities": {tool: ["shell.exec"]}},
        "auth": {"token": token},
    }


async def test_a_client_sending_only_min_protocol_and_id_and_mode_connects(
    gateway: RunningGateway,
) -> None:
    """`{minProtocol: 1, client: {id, mode}}` plus the token gets the usual hello-ok."""
    async with await foreign_socket(gateway) as ws:
        reply = await request(ws, "connect", OWNER_FRAME | owner_auth())
        assert reply["ok"] is True, reply
        assert reply["payload"]["type"] == "hello-ok"
        assert reply["payload"]["protocol"] == 1
        assert set(reply["payload"]) == {"type", "protocol", "server", "features"}
        listed = await request(ws, "sessions.list", {})
    assert listed["ok"] is True


@pytest.mark.parametrize("max_protocol", [0, 1, 7, None])
async def test_min_protocol_1_is_served_whatever_max_protocol_says(
    gateway: RunningGateway, max_protocol: int | None
) -> None:
    """The original ignores maxProtocol: minProtocol 1 always connects."""
    params: dict[str, Any] = OWNER_FRAME | owner_auth()
    if max_protocol is not None:
        params["maxProtocol"] = max_protocol
    async with await foreign_socket(gateway) as ws:
        reply = await request(ws, "connect", params)
    assert reply["ok"] is True, reply


@pytest.mark.parametrize("min_protocol", [2, 0])
async def test_a_client_that_cannot_speak_1_gets_102(
    gateway: RunningGateway, min_protocol: int
) -> None:
    """minProtocol 2, or 0 with no maxProtocol reaching 1, is 102 naming the version."""
    params = {"minProtocol": min_protocol, "client": {"id": "c", "mode": "client"}}
    async with await foreign_socket(gateway) as ws:
        reply = await request(ws, "connect", params)
    assert reply["error"]["code"] == 102
    assert reply["error"]["message"].startswith("Unsupported protocol version")


async def test_a_client_without_a_token_is_still_refused(gateway: RunningGateway) -> None:
    """Minimal frames are accepted, the credential rule is not relaxed: 401 without a token."""
    params = {"minProtocol": 1, "client": {"id": "c", "mode": "client"}}
    async with await foreign_socket(gateway) as ws:
        reply = await request(ws, "connect", params)
    assert reply["error"]["code"] == 401


async def test_a_minimal_node_connects_and_is_recorded_as_unknown_platform(
    gateway: RunningGateway,
) -> None:
    """A node frame without version/platform connects; the inventory says 'unknown'."""
    token = await credential(gateway, "node", "old-node")
    async with await foreign_socket(gateway) as ws:
        reply = await request(ws, "connect", node_frame("old-node", "Bash", token))
        assert reply["ok"] is True, reply
        listed = await request(ws, "tools.list", None)
    names = [tool["name"] for tool in listed["payload"]["tools"]]
    assert "old-node__Bash" in names
    async with await foreign_socket(gateway) as owner:
        await request(owner, "connect", OWNER_FRAME | owner_auth())
        inventory = await request(owner, "nodes.list", {})
    [node] = [n for n in inventory["payload"]["nodes"] if n["nodeId"] == "old-node"]
    assert node["platform"] == "unknown"
    assert node["version"] == "unknown"


@pytest.mark.parametrize(
    ("node_id", "tool"),
    [
        ("n1", "UnknownCallTool"),  # 15 characters: refused before, fine now
        ("n1", "T" * 60),  # n1__ + 60 = exactly 64
        ("n" * 61, "T"),  # the longest node id with a one-letter tool
        ("n1", "_private-tool_"),
    ],
)
async def test_tool_names_count_the_combined_name_up_to_64(
    gateway: RunningGateway, node_id: str, tool: str
) -> None:
    """The limit applies to `{nodeId}__{tool}`, the name the model sees."""
    token = await credential(gateway, "node", node_id)
    async with await foreign_socket(gateway) as ws:
        reply = await request(ws, "connect", node_frame(node_id, tool, token))
    assert reply["ok"] is True, reply


@pytest.mark.parametrize(
    ("node_id", "tool", "reason"),
    [
        ("n1", "T" * 61, "'n1__" + "T" * 61 + "'), must be at most 64 characters"),
        ("n1", "T" * 61, "it is 65 characters"),
        ("n1", "Re ad", "it has other characters"),
        ("n1", "Read.v2", "letters, digits, '_' and '-'"),
        ("n" * 62, "T", "at most 61 characters"),
        ("node_", "T", "not at the end"),
    ],
)
async def test_a_combined_name_the_providers_refuse_gets_103_naming_the_rule(
    gateway: RunningGateway, node_id: str, tool: str, reason: str
) -> None:
    """Over 64 characters or outside [A-Za-z0-9_-]: 103 saying which rule and the limit."""
    token = await credential(gateway, "node", node_id)
    async with await foreign_socket(gateway) as ws:
        reply = await request(ws, "connect", node_frame(node_id, tool, token))
    assert reply["error"]["code"] == 103
    assert reason in reply["error"]["message"]
    assert gateway.gateway.nodes.online_ids() == []
