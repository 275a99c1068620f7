"""`tools.list` is kept encoded (handlers/tools.py, NodeService.tools_json): what it
answers follows every change of who is online and with which tools, and its frame is
the one encoding the whole answer would give (docs/protocol.md#methods)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from gsv_core.protocol.frames import EncodedJson
from gsv_core.protocol.frames import encode_response
from gsv_core.protocol.schemas.connect import object_schema
from tests.gateway.test_nodes import READ
from tests.gateway.test_nodes import client_socket
from tests.gateway.test_nodes import node_socket
from tests.waiting import until
from tests.wire import request

WRITE = {
    "name": "Write",
    "description": "write a file",
    "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
}


def node_tools(listed: dict[str, Any]) -> list[dict[str, Any]]:
    assert listed["ok"], listed
    return [tool for tool in listed["payload"]["tools"] if not tool["name"].startswith("gsv__")]


def named(node_id: str, tool: dict[str, Any]) -> dict[str, Any]:
    """A node's tool as tools.list gives it: namespaced, its schema listing `required`."""
    schema = object_schema(tool["inputSchema"])
    return {**tool, "name": f"{node_id}__{tool['name']}", "inputSchema": schema}


async def test_the_list_follows_nodes_connecting_leaving_and_changing_tools(
    tmp_path: Path,
) -> None:
    async with serve(ServerConfig(database=tmp_path / "gsv.db"), port=0) as gw:
        client = await client_socket(gw)
        assert node_tools(await request(client, "tools.list")) == []
        b = await node_socket(gw, "b", [READ])
        assert node_tools(await request(client, "tools.list")) == [named("b", READ)]
        a = await node_socket(gw, "a", [READ, WRITE])
        expected = [named("a", READ), named("a", WRITE), named("b", READ)]  # nodes by id
        assert node_tools(await request(client, "tools.list")) == expected
        assert node_tools(await request(client, "tools.list")) == expected  # asked again

        await a.close()
        await until(lambda: gw.gateway.nodes.online("a") is None, "a to leave")
        assert node_tools(await request(client, "tools.list")) == [named("b", READ)]

        # b comes back offering other tools: the new ones, not what was kept for the old
        await b.close()
        await until(lambda: gw.gateway.nodes.online("b") is None, "b to leave")
        b = await node_socket(gw, "b", [WRITE])
        assert node_tools(await request(client, "tools.list")) == [named("b", WRITE)]

        forgotten = await request(client, "node.forget", {"nodeId": "b", "force": True})
        assert forgotten["ok"], forgotten
        assert node_tools(await request(client, "tools.list")) == []
        await b.close()
        await client.close()


async def test_the_kept_answer_is_the_frame_encoding_would_give(tmp_path: Path) -> None:
    """Native tools first, then nodes' tools: the frame, byte for byte, is what encoding
    the parsed answer again gives (no gap, no stray comma when a part is empty)."""
    async with serve(ServerConfig(database=tmp_path / "gsv.db"), port=0) as gw:
        client = await client_socket(gw)
        for nodes in ([], ["n1"], ["n1", "n2"]):
            for node_id in nodes:
                if gw.gateway.nodes.online(node_id) is None:
                    await node_socket(gw, node_id, [READ, WRITE])
            await client.send(json.dumps({"type": "req", "id": "x", "method": "tools.list"}))
            frame = await client.recv()
            parsed = json.loads(frame)
            assert frame == encode_response("x", parsed["payload"])
            names = [tool["name"] for tool in parsed["payload"]["tools"]]
            natives = [name for name in names if name.startswith("gsv__")]
            assert names[: len(natives)] == natives and natives
            assert names[len(natives) :] == [f"{n}__{t}" for n in nodes for t in ("Read", "Write")]
        await client.close()


def test_an_encoded_payload_is_written_as_it_is() -> None:
    payload = {"tools": [{"name": "é", "inputSchema": {}}]}
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    assert encode_response(7, EncodedJson(text)) == encode_response(7, payload)
