"""The connect handshake (docs/protocol.md#connect): codes, tokens, modes, replacement."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed

from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from gsv_core.protocol.events import EVENTS
from gsv_core.protocol.methods import METHODS
from tests.waiting import until
from tests.wire import connect_params
from tests.wire import credential
from tests.wire import handshake
from tests.wire import open_raw
from tests.wire import request


async def test_hello_ok_lists_exactly_the_methods_the_router_serves(
    gateway: RunningGateway,
) -> None:
    """features.methods is the router's real list, events only real ones."""
    async with await open_raw(gateway.url) as ws:
        hello = await handshake(ws)
    assert hello["type"] == "hello-ok"
    assert hello["protocol"] == 1
    assert hello["server"]["connectionId"]
    assert hello["features"]["methods"] == gateway.gateway.router.methods()
    assert {"connect", "config.get", "config.set", "tools.list"} <= set(
        hello["features"]["methods"]
    )
    assert set(hello["features"]["methods"]) <= set(METHODS)
    assert set(hello["features"]["events"]) <= EVENTS


@pytest.mark.parametrize(
    ("min_protocol", "max_protocol", "ok"),
    [(1, 1, True), (1, 3, True), (0, 1, True), (2, 3, False), (0, 0, False)],
)
async def test_the_protocol_range_must_contain_version_1(
    gateway: RunningGateway, min_protocol: int, max_protocol: int, ok: bool
) -> None:
    """A client range containing 1 is accepted; otherwise 102."""
    async with await open_raw(gateway.url) as ws:
        params = connect_params()
        params.update(minProtocol=min_protocol, maxProtocol=max_protocol)
        reply = await request(ws, "connect", params)
    assert reply["ok"] is ok
    if not ok:
        assert reply["error"]["code"] == 102
        assert "protocol" in reply["error"]["message"].lower()


@pytest.mark.parametrize(
    ("params", "message_part"),
    [
        ({"minProtocol": 1, "maxProtocol": 1}, "client"),
        ("not an object", "object"),
        (connect_params(mode="robot"), "Invalid client mode"),
        (connect_params(mode="node"), "Node mode requires tools"),
        (connect_params(mode="channel"), "Channel mode requires channel field"),
        (
            connect_params(mode="node", tools=[{"name": "Bash"}, {"name": "Bash"}]),
            "Duplicate tool name",
        ),
    ],
)
async def test_bad_connect_params_get_103_with_a_reason(
    gateway: RunningGateway, params: object, message_part: str
) -> None:
    """Missing fields, unknown modes and bad mode specifics are 103 with a readable message."""
    async with await open_raw(gateway.url) as ws:
        reply = await request(ws, "connect", params)
        assert reply["error"]["code"] == 103
        assert message_part in reply["error"]["message"]
        # the socket stays usable: a good connect still works
        assert (await handshake(ws))["type"] == "hello-ok"


async def test_requests_before_connect_get_101_even_for_unknown_methods(
    gateway: RunningGateway,
) -> None:
    """Dispatch rule: not connected comes before unknown method."""
    async with await open_raw(gateway.url) as ws:
        for method in ("config.get", "no.such.method"):
            reply = await request(ws, method)
            assert reply["error"] == {"code": 101, "message": "Not connected"}


@pytest.fixture
async def token_gateway(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A gateway whose owner put their own token in the local secret store first."""
    from gsv_core.localconfig import set_secret

    set_secret("gateway.token", "s3cret-token-of-the-owner-0123")
    async with serve(ServerConfig(database=tmp_path / "tok.db"), port=0) as running:
        yield running


@pytest.mark.parametrize("token", [None, "", "wrong"])
async def test_a_bad_or_missing_token_gets_401_before_the_4001_close(
    token_gateway: RunningGateway, token: str | None
) -> None:
    """The 401 response arrives first, then the socket closes with 4001 (the original closed before replying)."""
    async with await open_raw(token_gateway.url) as ws:
        params = connect_params(token=token)
        await ws.send(
            json.dumps({"type": "req", "id": "c1", "method": "connect", "params": params})
        )
        reply = json.loads(await ws.recv())
        assert reply["id"] == "c1"
        assert reply["ok"] is False
        assert reply["error"]["code"] == 401
        assert reply["error"]["message"] == "Unauthorized: invalid or missing token"
        with pytest.raises(ConnectionClosed) as closed:
            await ws.recv()
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 4001


async def test_the_right_token_is_accepted(token_gateway: RunningGateway) -> None:
    """A configured token is required and the matching one connects."""
    async with await open_raw(token_gateway.url) as ws:
        hello = await handshake(ws, token="s3cret-token-of-the-owner-0123")
        assert hello["type"] == "hello-ok"
        reply = await request(ws, "config.get", {"path": "auth.token"})
    assert reply["payload"]["value"] == "***"


async def test_a_second_client_with_the_same_id_replaces_the_first(
    gateway: RunningGateway,
) -> None:
    """The older client socket is closed with 1000 and the newer one is registered."""
    async with await open_raw(gateway.url) as first, await open_raw(gateway.url) as second:
        await handshake(first, client_id="same-id")
        await handshake(second, client_id="same-id")
        with pytest.raises(ConnectionClosed) as closed:
            await first.recv()
        assert closed.value.rcvd is not None
        assert closed.value.rcvd.code == 1000
        assert closed.value.rcvd.reason == "Replaced by newer client connection"
        assert (await request(second, "tools.list"))["ok"]
        assert list(gateway.gateway.registry.clients) == ["same-id"]


async def test_a_connected_node_cannot_be_taken_over(gateway: RunningGateway) -> None:
    """A second connection for a connected node id is refused (409); the first keeps the
    node, its calls and their results."""
    tools = [{"name": "Bash", "description": "run", "inputSchema": {}}]
    token = await credential(gateway, "node", "same-id")
    async with await open_raw(gateway.url) as first, await open_raw(gateway.url) as second:
        await handshake(first, mode="node", client_id="same-id", tools=tools, token=token)
        reply = await request(second, "connect", connect_params(
            mode="node", client_id="same-id", tools=tools, token=token))  # fmt: skip
        assert reply["error"]["code"] == 409
        assert "already connected" in reply["error"]["message"]
        node = gateway.gateway.nodes.online("same-id")
        assert node is not None and node.peer.connected
        assert (await request(first, "tools.list"))["ok"]
    # once the first is gone, the node connects again
    await until(lambda: gateway.gateway.nodes.online("same-id") is None, "the first to go")
    async with await open_raw(gateway.url) as again:
        await handshake(again, mode="node", client_id="same-id", tools=tools, token=token)


async def test_a_node_whose_old_socket_is_silent_takes_its_place_at_once(
    gateway: RunningGateway,
) -> None:
    """A dropped network: the old socket never answers the gateway's ping, so the node's
    new connection is accepted (after the short probe) and the old one closed with 1001."""
    tools = [{"name": "Bash", "description": "run", "inputSchema": {}}]
    token = await credential(gateway, "node", "laptop")
    async with await open_raw(gateway.url) as old, await open_raw(gateway.url) as new:
        await handshake(old, mode="node", client_id="laptop", tools=tools, token=token)
        old.transport.pause_reading()  # silent: the ping is never read, no pong is sent
        await handshake(new, mode="node", client_id="laptop", tools=tools, token=token)
        node = gateway.gateway.nodes.online("laptop")
        assert node is not None and (await request(new, "tools.list"))["ok"]
        old.transport.resume_reading()
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                await old.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001


async def test_channel_connections_are_keyed_by_channel_and_account(
    gateway: RunningGateway,
) -> None:
    """accountId defaults to the client id; the key is `{channel}:{accountId}`."""
    async with await open_raw(gateway.url) as ws:
        await handshake(ws, mode="channel", client_id="bridge-1", channel="test")
        assert list(gateway.gateway.registry.channels) == ["test:bridge-1"]


async def test_node_tools_are_listed_namespaced_and_sorted_by_node(gateway: RunningGateway) -> None:
    """tools.list names node tools `{nodeId}__{tool}`, nodes in id order; gone when the node goes."""
    tool = {"name": "Read", "description": "read a file", "inputSchema": {"type": "object"}}
    async with await open_raw(gateway.url) as client, await open_raw(gateway.url) as node_b:
        await handshake(client)
        await handshake(node_b, mode="node", client_id="b-node", tools=[tool])
        async with await open_raw(gateway.url) as node_a:
            await handshake(node_a, mode="node", client_id="a-node", tools=[tool])
            names = [t["name"] for t in (await request(client, "tools.list"))["payload"]["tools"]]
            native = [n for n in names if n.startswith("gsv__")]
            assert native and names[: len(native)] == native  # native tools come first
            assert names[len(native) :] == ["a-node__Read", "b-node__Read"]
        # node_a closed: after the gateway notices, only b remains
        for _ in range(200):
            tools = (await request(client, "tools.list"))["payload"]["tools"]
            names = [t["name"] for t in tools if not t["name"].startswith("gsv__")]
            if names == ["b-node__Read"]:
                break
        assert names == ["b-node__Read"]
