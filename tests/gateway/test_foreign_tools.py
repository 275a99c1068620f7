"""Tool definitions as a client written for the original sees them: the native `gsv__*`
tools named, described and shaped as the original's reference lists them, and every
schema carrying `required`, in `tools.list` and in what the model is sent. Frames are
built by hand, as a foreign client builds them."""

from __future__ import annotations

import json
from typing import Any

from websockets.asyncio.client import ClientConnection

from gsv_core.gateway.server import RunningGateway
from tests.fakes.provider import FakeProvider
from tests.wire import connect_minimal
from tests.wire import credential
from tests.wire import request

NUMBER = {"integer", "number"}
# The original's native tools in its order: the first sentence of each description, every
# documented parameter with its JSON type(s), and the required ones.
SEED_TOOLS: list[tuple[str, str, dict[str, set[str]], set[str]]] = [
    ("gsv__ReadFile", "Read a file or list a directory in the agent's workspace.",
     {"path": {"string"}}, set()),
    ("gsv__WriteFile", "Write or create a file in the agent's workspace.",
     {"path": {"string"}, "content": {"string"}}, {"path", "content"}),
    ("gsv__EditFile", "Edit a file by replacing exact text matches.",
     {"path": {"string"}, "oldString": {"string"}, "newString": {"string"},
      "replaceAll": {"boolean"}}, {"path", "oldString", "newString"}),
    ("gsv__DeleteFile", "Delete a file from the agent's workspace.",
     {"path": {"string"}}, {"path"}),
    ("gsv__ConfigGet", "Inspect the Gateway configuration.", {"path": {"string"}}, set()),
    ("gsv__LogsGet", "Fetch recent log lines from a connected node.",
     {"nodeId": {"string"}, "lines": NUMBER}, set()),
    ("gsv__Cron", "Manage scheduled cron jobs.",
     {"action": {"string"}, "id": {"string"}, "mode": {"string"}, "agentId": {"string"},
      "includeDisabled": {"boolean"}, "limit": NUMBER, "offset": NUMBER, "job": {"object"},
      "patch": {"object"}, "jobId": {"string"}}, {"action"}),
    ("gsv__Message", "Send a message to a channel or user.",
     {"text": {"string"}, "channel": {"string"}, "to": {"string"}, "peerKind": {"string"},
      "accountId": {"string"}, "replyToId": {"string"}}, {"text"}),
    ("gsv__SessionsList", "List active sessions with metadata",
     {"limit": NUMBER, "offset": NUMBER, "messageLimit": NUMBER}, set()),
    ("gsv__SessionSend", "Send a message into another session",
     {"sessionKey": {"string"}, "message": {"string"}, "waitSeconds": NUMBER},
     {"sessionKey", "message"}),
    ("gsv__Transfer", "Transfer a file between connected nodes and/or the workspace. The tool "
     "stays pending until the transfer completes end-to-end.",
     {"source": {"string"}, "destination": {"string"}}, {"source", "destination"}),
]  # fmt: skip
ENUMS = {
    ("gsv__Cron", "action"): {"status", "list", "add", "update", "remove", "run", "runs"},
    ("gsv__Cron", "mode"): {"due", "force"},
    ("gsv__Message", "peerKind"): {"dm", "group", "channel", "thread"},
}


def json_types(prop: dict[str, Any]) -> set[str]:
    """The JSON types a property accepts besides null."""
    options = prop.get("anyOf", [prop])
    return {o["type"] for o in options if o.get("type") not in (None, "null")}


def enum_of(prop: dict[str, Any]) -> set[str]:
    return {v for o in prop.get("anyOf", [prop]) for v in o.get("enum", [])}


async def bare_node(gw: RunningGateway) -> ClientConnection:
    """A node whose tools' schemas leave out `required` (one has no schema at all)."""
    tools = [
        {"name": "Ping", "description": "p", "inputSchema": {}},
        {"name": "Echo", "description": "e",
         "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
    ]  # fmt: skip
    runtime = {
        "hostCapabilities": ["shell.exec"],
        "toolCapabilities": {"Ping": ["shell.exec"], "Echo": ["shell.exec"]},
    }
    token = await credential(gw, "node", "n1")
    client = {"id": "n1", "mode": "node"}
    return await connect_minimal(
        gw.url, client, tools=tools, nodeRuntime=runtime, auth={"token": token}
    )


GSV_ADDITIONS = [
    "gsv__WebFetch",
    "gsv__Spawn",
    "gsv__MemorySearch",
    "gsv__MemoryGet",
]  # native tools the original did not have (docs/tools.md)


async def test_native_tools_match_the_originals_reference(owner: ClientConnection) -> None:
    """Names in order, description openings, documented params and types, required sets."""
    listed = (await request(owner, "tools.list", None))["payload"]["tools"]
    # the reference's tools first, in its order; then gsv's own additions
    tools, added = listed[: len(SEED_TOOLS)], [t["name"] for t in listed[len(SEED_TOOLS) :]]
    assert [t["name"] for t in tools] == [name for name, *_ in SEED_TOOLS]
    assert added == GSV_ADDITIONS
    for tool, (name, opening, params, required) in zip(tools, SEED_TOOLS, strict=True):
        assert tool["description"].startswith(opening), name
        schema = tool["inputSchema"]
        assert schema["type"] == "object"
        assert set(schema["required"]) == required, name
        for param, types in params.items():
            prop = schema["properties"][param]
            assert json_types(prop) <= types and json_types(prop), (name, param, prop)
            if (name, param) in ENUMS:
                assert enum_of(prop) == ENUMS[(name, param)], (name, param)


async def test_every_listed_schema_carries_required(
    gw: RunningGateway, owner: ClientConnection
) -> None:
    """Native and node tools alike list `required`, an empty list when nothing is."""
    async with await bare_node(gw):
        tools = (await request(owner, "tools.list", None))["payload"]["tools"]
    by_name = {t["name"]: t["inputSchema"] for t in tools}
    assert all(isinstance(schema["required"], list) for schema in by_name.values())
    assert by_name["gsv__ReadFile"]["required"] == []
    assert by_name["n1__Ping"] == {"type": "object", "properties": {}, "required": []}
    assert by_name["n1__Echo"]["required"] == []
    assert by_name["n1__Echo"]["properties"] == {"text": {"type": "string"}}


async def test_the_model_is_sent_schemas_with_required(
    gw: RunningGateway, owner: ClientConnection, fake: FakeProvider
) -> None:
    """What the provider receives for a run lists `required` on every tool."""
    async with await bare_node(gw):
        params = {"sessionKey": "main", "message": "hello"}
        reply = await request(owner, "chat.send", params)
        assert reply["ok"], reply
        while True:  # the run's end, as a foreign client waits for it
            frame = json.loads(await owner.recv())
            if frame.get("event") == "chat" and frame["payload"]["state"] == "final":
                break
    [sent_request] = fake.requests
    sent = {tool.name: tool.parameters for tool in sent_request.tools}
    assert {"gsv__ReadFile", "gsv__ToolSearch", "n1__Ping", "n1__Echo"} <= set(sent)
    assert all(isinstance(schema["required"], list) for schema in sent.values())
    assert sent["n1__Ping"]["required"] == []
    assert sent["gsv__ReadFile"]["required"] == []
