"""Bad params as a client written for the original meets them: code 400, the original's
message where it had one, gsv's `details.errors` naming every bad field. Frames are built
by hand here, as a foreign client builds them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection

from gsv_core.gateway.server import RunningGateway
from gsv_core.protocol.methods import CLIENT
from gsv_core.protocol.methods import CONNECT
from gsv_core.protocol.methods import METHODS
from gsv_core.protocol.methods import NODE
from tests.wire import connect_minimal
from tests.wire import credential
from tests.wire import owner_token
from tests.wire import request

SESSION_KEY = "sessionKey required"
CALL_ID = "callId required"
TRANSFER_ID = "transferId required"

# Every method and its required params: the original's message, or None where gsv's own
# message ("invalid params for {method}: ...") is the answer.
REQUIRED: dict[str, tuple[set[str], str | None]] = {
    "auth.invite": (set(), None),
    "auth.list": (set(), None),
    "auth.revoke": ({"id"}, None),
    "channel.inbound": (
        {"channel", "accountId", "peer", "message"},
        "channel, accountId, peer, and message required",
    ),
    "channel.login": ({"channel"}, None),
    "channel.logout": ({"channel"}, None),
    "channel.start": ({"channel"}, None),
    "channel.status": ({"channel"}, None),
    "channel.stop": ({"channel"}, None),
    "channels.list": (set(), None),
    "chat.send": ({"sessionKey", "message"}, "sessionKey and message required"),
    "chat.subscribe": ({"sessionKeys"}, None),
    "config.get": (set(), None),
    "config.set": ({"path", "value"}, "path required"),
    "cron.add": ({"name", "schedule", "spec"}, "name, schedule, and spec are required"),
    "cron.list": (set(), None),
    "cron.remove": ({"id"}, "id is required"),
    "cron.run": (set(), None),
    "cron.runs": (set(), None),
    "cron.status": (set(), None),
    "cron.update": ({"id", "patch"}, "id and patch are required"),
    "gateway.status": (set(), None),
    "heartbeat.start": (set(), None),
    "heartbeat.status": (set(), None),
    "heartbeat.trigger": (set(), None),
    "logs.get": (set(), None),
    "logs.result": ({"callId"}, CALL_ID),
    "models.list": (set(), None),
    "models.test": (set(), None),
    "node.exec.event": ({"eventId", "sessionId", "event"}, None),
    "node.forget": ({"nodeId"}, None),
    "node.probe.result": ({"probeId", "ok"}, None),
    "nodes.list": (set(), None),
    "pair.approve": ({"channel", "senderId"}, None),
    "pair.list": (set(), None),
    "pair.reject": ({"channel", "senderId"}, None),
    "security.audit": (set(), None),
    "session.compact": ({"sessionKey"}, SESSION_KEY),
    "session.get": ({"sessionKey"}, SESSION_KEY),
    "session.history": ({"sessionKey"}, SESSION_KEY),
    "session.patch": ({"sessionKey"}, SESSION_KEY),
    "session.preview": ({"sessionKey"}, SESSION_KEY),
    "session.reset": ({"sessionKey"}, SESSION_KEY),
    "session.stats": ({"sessionKey"}, SESSION_KEY),
    "sessions.list": (set(), None),
    "skills.status": (set(), None),
    "skills.update": (set(), None),
    "tool.approvals": (set(), None),
    "tool.approve": ({"approvalId", "decision"}, None),
    "tool.invoke": ({"tool"}, "tool required"),
    "tool.request": ({"callId", "tool", "sessionKey"}, None),
    "tool.result": ({"callId"}, CALL_ID),
    "tools.list": (set(), None),
    "transfer.accept": ({"transferId"}, TRANSFER_ID),
    "transfer.complete": ({"transferId"}, TRANSFER_ID),
    "transfer.done": ({"transferId"}, TRANSFER_ID),
    "transfer.meta": ({"transferId"}, TRANSFER_ID),
    "transfer.request": ({"source", "destination"}, None),
    "usage.get": (set(), None),
    "memory.search": ({"query"}, None),
    "memory.reindex": (set(), None),
    "memory.status": (set(), None),
    "mcp.list": (set(), None),
    "mcp.add": ({"name"}, None),
    "mcp.remove": ({"name"}, None),
    "mcp.test": ({"name"}, None),
    "workspace.delete": ({"path"}, None),
    "workspace.list": (set(), None),
    "workspace.read": ({"path"}, None),
    "workspace.write": ({"path", "content"}, None),
    "web.link": (set(), None),
}
# Methods without required params that only read: `{}` must pass validation.
READ_ONLY = [
    "auth.list", "channels.list", "config.get", "cron.list", "cron.runs", "cron.status",
    "gateway.status", "heartbeat.status", "nodes.list", "pair.list", "sessions.list",
    "usage.get", "mcp.list", "memory.status",
    "skills.status", "tool.approvals", "tools.list", "workspace.list",
]  # fmt: skip
# A good value for each required field, so that one field at a time can be left out.
GOOD = {
    "sessionKey": "main", "message": "hi", "path": "notes.md", "value": 1, "tool": "n1__Read",
    "callId": "c1", "channel": "test", "accountId": "a", "peer": {"kind": "dm", "id": "p"},
    "name": "job", "schedule": {"kind": "every", "everyMinutes": 5}, "id": "x", "patch": {},
    "spec": {"mode": "systemEvent", "text": "t"}, "transferId": 1, "eventId": "e",
    "sessionId": "s", "event": "started", "probeId": "p", "ok": True, "nodeId": "n1",
    "senderId": "s", "approvalId": "a", "decision": "allow", "source": "n1:/a",
    "destination": "gsv:workspace/b", "content": "x", "query": "word", "sessionKeys": ["main"],
}  # fmt: skip
# where one method wants another shape under the same name
GOOD_IN = {("channel.inbound", "message"): {"id": "m1", "text": "hi"}}
ONE_MISSING = [
    (method, field) for method, (fields, _) in sorted(REQUIRED.items()) for field in sorted(fields)
]


class Peers:
    """One foreign socket per mode, each connected with the original's minimal frame."""

    def __init__(self, sockets: dict[str, ClientConnection]) -> None:
        self.sockets = sockets

    async def call(self, method: str, params: Any) -> dict[str, Any]:
        """Send a req from a mode allowed to call `method`; return the res."""
        modes = METHODS[method].modes
        ws = self.sockets[CLIENT if CLIENT in modes else NODE if NODE in modes else "channel"]
        return await request(ws, method, params)


async def _join(gateway: RunningGateway, client: dict[str, Any], token: str | None) -> Any:
    extra: dict[str, Any] = {}
    if client["mode"] == NODE:
        extra["tools"] = [{"name": "Read", "inputSchema": {"type": "object"}}]
        runtime = {"hostCapabilities": ["filesystem.read"]}
        extra["nodeRuntime"] = runtime | {"toolCapabilities": {"Read": ["filesystem.read"]}}
    return await connect_minimal(gateway.url, client, auth={"token": token}, **extra)


@pytest.fixture
async def peers(gateway: RunningGateway) -> AsyncIterator[Peers]:
    sockets = {
        "client": await _join(gateway, {"id": "old", "mode": "client"}, owner_token()),
        "node": await _join(
            gateway, {"id": "n1", "mode": "node"}, await credential(gateway, "node", "n1")
        ),
        "channel": await _join(
            gateway,
            {"id": "a", "mode": "channel", "channel": "test"},
            await credential(gateway, "channel", "test"),
        ),
    }
    yield Peers(sockets)
    for ws in sockets.values():
        await ws.close()


def test_the_table_covers_every_method_the_gateway_serves(gateway: RunningGateway) -> None:
    """A new method cannot be added without its row in the required-params table."""
    assert set(REQUIRED) == set(gateway.gateway.router.methods()) - {CONNECT}


async def test_every_method_names_each_missing_required_param(peers: Peers) -> None:
    """`{}` to a method with required params: 400, its message, every required field listed."""
    for method, (fields, message) in sorted(REQUIRED.items()):
        if not fields:
            continue
        reply = await peers.call(method, {})
        error = reply["error"]
        assert error["code"] == 400, (method, error)
        assert error["message"] == message or (
            message is None and error["message"].startswith(f"invalid params for {method}: ")
        ), (method, error)
        named = {problem["field"] for problem in error["details"]["errors"]}
        assert named == fields, (method, named)


@pytest.mark.parametrize(("method", "field"), ONE_MISSING)
async def test_one_missing_field_is_named_alone(peers: Peers, method: str, field: str) -> None:
    """All other required params given: the one left out is the one the error names."""
    fields, message = REQUIRED[method]
    params = {name: GOOD_IN.get((method, name), GOOD[name]) for name in fields if name != field}
    error = (await peers.call(method, params))["error"]
    assert error["code"] == 400
    assert [p["field"] for p in error["details"]["errors"]] == [field]
    if message is not None and field in message.replace(",", " ").split():
        assert error["message"] == message
    else:  # e.g. config.set without `value`: the original had no message for it
        assert error["message"].startswith(f"invalid params for {method}: {field}: ")


async def test_methods_without_required_params_accept_an_empty_object(peers: Peers) -> None:
    """The read-only methods with nothing required answer `{}` and absent params alike."""
    for method in READ_ONLY:
        assert REQUIRED[method] == (set(), None)
        for params in ({}, None):
            reply = await peers.call(method, params)
            assert reply["ok"] is True, (method, reply)


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("session.get", {"sessionKey": ""}, SESSION_KEY),
        ("session.get", {"sessionKey": None}, SESSION_KEY),
        ("session.get", {"sessionKey": 7}, SESSION_KEY),
        ("chat.send", {"sessionKey": "main", "message": ""}, "sessionKey and message required"),
        ("transfer.done", {"transferId": "abc"}, TRANSFER_ID),
        ("logs.get", {"lines": 0}, "lines must be a positive number"),
        ("logs.get", {"lines": "many"}, "lines must be a positive number"),
    ],
)
async def test_empty_null_and_wrongly_typed_fields_get_the_original_message(
    peers: Peers, method: str, params: dict[str, Any], message: str
) -> None:
    """The original checked presence (a falsy value is missing): its message, our details."""
    error = (await peers.call(method, params))["error"]
    assert error["code"] == 400
    assert error["message"] == message
    assert error["details"]["errors"]


@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        ("config.set", {"path": "no such path!", "value": 1}, "path"),
        ("chat.send", {"sessionKey": "main", "message": "hi", "runId": "r" * 500}, "runId"),
        ("transfer.done", {"transferId": -1}, "transferId"),
    ],
)
async def test_bad_values_the_original_never_checked_get_gsvs_message(
    peers: Peers, method: str, params: dict[str, Any], field: str
) -> None:
    """A present but malformed value is not 'required': the message names field and rule."""
    error = (await peers.call(method, params))["error"]
    assert error["code"] == 400
    assert error["message"].startswith(f"invalid params for {method}: {field}: ")
    assert [p["field"] for p in error["details"]["errors"]] == [field]


async def test_params_that_are_not_an_object_get_400(peers: Peers) -> None:
    """A list or a string as params is refused before any model runs."""
    for params in (["sessionKey"], "main"):
        error = (await peers.call("session.get", params))["error"]
        assert error["code"] == 400
        assert "params must be an object" in error["message"]
