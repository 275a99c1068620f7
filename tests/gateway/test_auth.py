"""Secure by default: a credential per role, join codes, revocation, Origin, TLS.

Every refusal is checked on a real gateway over real sockets: the right code and message,
the socket closed after the reply, and nothing reachable before `connect` succeeds.
"""

from __future__ import annotations

import json
import logging
import ssl
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.exceptions import InvalidStatus

from gsv_core.client import ClientIdentity
from gsv_core.client import GatewayClient
from gsv_core.errors import Forbidden
from gsv_core.gateway.auth import JOIN_CODE_TTL_MS
from gsv_core.gateway.auth import JOIN_FAILURES_ALLOWED
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from gsv_core.localconfig import get_secret
from tests.wire import connect_params
from tests.wire import credential
from tests.wire import handshake
from tests.wire import open_raw
from tests.wire import request

TOOLS = [{"name": "Bash", "description": "run", "inputSchema": {"type": "object"}}]


async def _refused(url: str, params: dict[str, Any]) -> dict[str, Any]:
    """Send one connect that must fail: its error, after which the socket must close 4001."""
    async with await open_raw(url) as ws:
        reply = await request(ws, "connect", params)
        assert reply["ok"] is False, reply
        with pytest.raises(ConnectionClosed) as closed:
            await request(ws, "config.get")
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4001
    error: dict[str, Any] = reply["error"]
    return error


def _node(node_id: str, **auth: str) -> dict[str, Any]:
    return connect_params(mode="node", client_id=node_id, token=None, tools=TOOLS, auth=auth)


async def test_first_start_makes_a_strong_owner_token_the_cli_finds(
    gateway: RunningGateway,
) -> None:
    """No typing: the token is generated and kept in the local secret store."""
    assert len(gateway.token) >= 40
    assert get_secret("gateway.token") == gateway.token


async def test_an_existing_owner_token_is_kept_across_restarts(tmp_path: Path) -> None:
    config = ServerConfig(database=tmp_path / "gsv.db")
    async with serve(config, port=0) as first:
        token = first.token
    async with serve(config, port=0) as second:
        assert second.token == token


@pytest.mark.parametrize("token", [None, "", "wrong", "a.b", "n123.x"])
async def test_no_or_a_wrong_token_gets_401(gateway: RunningGateway, token: str | None) -> None:
    error = await _refused(gateway.url, connect_params(token=token))
    assert error == {"code": 401, "message": "Unauthorized: invalid or missing token"}


@pytest.mark.parametrize("token", ["x" * 5000, "\udc80"], ids=["5000 chars", "lone surrogate"])
async def test_a_token_that_is_no_string_is_a_shape_error(
    gateway: RunningGateway, token: str
) -> None:
    async with await open_raw(gateway.url) as ws:
        reply = await request(ws, "connect", connect_params(token=token))
        assert reply["error"]["code"] == 103 and "auth.token" in reply["error"]["message"]
        assert (await request(ws, "config.get"))["error"]["code"] == 101


async def test_the_owner_token_cannot_connect_as_a_node_or_channel(
    gateway: RunningGateway,
) -> None:
    """A client token is not replayable as another role: 403 with what to do instead."""
    error = await _refused(gateway.url, _node("n1", token=gateway.token))
    assert error["code"] == 403 and "gsv nodes invite" in error["message"]
    channel = connect_params(mode="channel", client_id="bridge")
    channel["client"]["channel"] = "matrix"
    error = await _refused(gateway.url, channel)
    assert error["code"] == 403 and "gsv channels invite" in error["message"]
    assert gateway.gateway.nodes.online_ids() == []


async def test_a_node_credential_connects_only_as_its_node(gateway: RunningGateway) -> None:
    token = await credential(gateway, "node", "laptop")
    async with await open_raw(gateway.url) as ws:
        await handshake(ws, mode="node", client_id="laptop", tools=TOOLS, token=token)
        assert gateway.gateway.nodes.online_ids() == ["laptop"]
    other = await _refused(gateway.url, _node("desktop", token=token))
    assert other["code"] == 403 and "'laptop'" in other["message"]
    as_client = await _refused(gateway.url, connect_params(token=token))
    assert as_client["code"] == 403
    forged = token.split(".")[0] + ".not-the-secret"
    assert (await _refused(gateway.url, _node("laptop", token=forged)))["code"] == 401


async def test_a_join_code_mints_a_credential_once(gateway: RunningGateway) -> None:
    async with GatewayClient(gateway.url, token=gateway.token) as owner:
        invite = await owner.call("auth.invite", {"role": "node"})
    code = invite["code"]
    assert len(code.replace("-", "")) == 10
    async with await open_raw(gateway.url) as ws:
        hello = await handshake(ws, mode="node", client_id="far-away", tools=TOOLS,
                                token=None, auth={"joinCode": code.lower()})  # fmt: skip
    issued = hello["credential"]
    # the credential works from now on; the code never again
    async with await open_raw(gateway.url) as ws:
        again = await handshake(ws, mode="node", client_id="far-away", tools=TOOLS, token=issued)
        assert "credential" not in again
    reused = await _refused(gateway.url, _node("far-away", joinCode=code))
    assert reused["code"] == 401 and "already used" in reused["message"]
    stored = await gateway.gateway.db.read(
        lambda conn: conn.execute("SELECT secret_hash FROM credentials").fetchall()
    )
    assert issued.split(".")[1] not in json.dumps(stored)  # only a hash is kept


async def test_a_code_bound_to_a_node_id_admits_only_that_id(gateway: RunningGateway) -> None:
    async with GatewayClient(gateway.url, token=gateway.token) as owner:
        code = (await owner.call("auth.invite", {"role": "node", "subject": "pi"}))["code"]
    assert (await _refused(gateway.url, _node("not-pi", joinCode=code)))["code"] == 401
    async with await open_raw(gateway.url) as ws:
        hello = await handshake(ws, mode="node", client_id="pi", tools=TOOLS, token=None,
                                auth={"joinCode": code})  # fmt: skip
    assert hello["credential"]


async def test_an_expired_join_code_is_refused(tmp_path: Path) -> None:
    now = [1_700_000_000_000]
    config = ServerConfig(database=tmp_path / "gsv.db", now_ms=lambda: now[0])
    async with serve(config, port=0) as gw:
        async with GatewayClient(gw.url, token=gw.token) as owner:
            code = (await owner.call("auth.invite", {"role": "node"}))["code"]
        now[0] += JOIN_CODE_TTL_MS + 1
        error = await _refused(gw.url, _node("late", joinCode=code))
    assert error["code"] == 401 and "expired" in error["message"]


async def test_wrong_join_codes_are_rate_limited_per_address(gateway: RunningGateway) -> None:
    for attempt in range(JOIN_FAILURES_ALLOWED):
        error = await _refused(gateway.url, _node(f"guess-{attempt}", joinCode="AAAAA-AAAAA"))
        assert error["code"] == 401
    async with GatewayClient(gateway.url, token=gateway.token) as owner:
        good = (await owner.call("auth.invite", {"role": "node"}))["code"]
    # even a right code waits now: guessing cannot continue by luck
    assert (await _refused(gateway.url, _node("real", joinCode=good)))["code"] == 429


async def test_revoking_a_node_disconnects_it_and_ends_its_credential(
    gateway: RunningGateway,
) -> None:
    token = await credential(gateway, "node", "old-box")
    async with await open_raw(gateway.url) as node_ws:
        await handshake(node_ws, mode="node", client_id="old-box", tools=TOOLS, token=token)
        async with GatewayClient(gateway.url, token=gateway.token) as owner:
            listed = (await owner.call("auth.list"))["credentials"]
            assert [(c["subject"], c["connected"]) for c in listed] == [("old-box", True)]
            result = await owner.call("auth.revoke", {"id": "old-box"})
            assert result["disconnected"] == 1 and result["revoked"][0]["subject"] == "old-box"
            with pytest.raises(ConnectionClosed) as closed:
                await node_ws.recv()
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4001
            assert (await owner.call("auth.list"))["credentials"] == []
            with pytest.raises(Exception, match="no active credential"):
                await owner.call("auth.revoke", {"id": "old-box"})
    assert (await _refused(gateway.url, _node("old-box", token=token)))["code"] == 401


async def test_a_channel_adapter_joins_for_its_channel_only(gateway: RunningGateway) -> None:
    async with GatewayClient(gateway.url, token=gateway.token) as owner:
        code = (await owner.call("auth.invite", {"role": "channel", "subject": "matrix"}))["code"]
    adapter = ClientIdentity(mode="channel", id="bridge", channel="matrix", join_code=code)
    joining = GatewayClient(gateway.url, identity=adapter)
    try:
        issued = (await joining.connect())["credential"]
        assert list(gateway.gateway.registry.channels) == ["matrix:bridge"]
    finally:
        await joining.close()
    listed = await gateway.gateway.auth.store.list_all()
    assert [(c.role, c.subject) for c in listed] == [("channel", "matrix")]
    # the adapter reconnects with its credential; as another channel it is refused
    again = ClientIdentity(mode="channel", id="bridge", channel="matrix")
    async with GatewayClient(gateway.url, token=issued, identity=again):
        pass
    elsewhere = ClientIdentity(mode="channel", id="bridge", channel="discord")
    with pytest.raises(Forbidden):
        await GatewayClient(gateway.url, token=issued, identity=elsewhere).connect()


async def test_auth_methods_are_for_the_owner_only(gateway: RunningGateway) -> None:
    token = await credential(gateway, "node", "n1")
    async with await open_raw(gateway.url) as ws:
        await handshake(ws, mode="node", client_id="n1", tools=TOOLS, token=token)
        for method in ("auth.invite", "auth.list", "auth.revoke"):
            reply = await request(ws, method, {"id": "n1"})
            assert reply["error"]["code"] == 403, (method, reply)


async def test_refusals_are_logged_without_the_token(
    gateway: RunningGateway, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="gsv_core.gateway.auth")
    await _refused(gateway.url, connect_params(token="secret-guess-7c1f"))
    await _refused(gateway.url, _node("n2", token=gateway.token))
    text = caplog.text
    assert "refused connect from 127.0.0.1:" in text
    assert "secret-guess-7c1f" not in text and gateway.token not in text


# -- browsers: the Origin check --------------------------------------------------------


async def test_a_browser_origin_is_refused_with_403(gateway: RunningGateway) -> None:
    """Cross-site WebSocket hijacking: a page the owner visits cannot open /ws."""
    with pytest.raises(InvalidStatus) as refused:
        await open_raw(gateway.url, origin="https://evil.example")
    assert refused.value.response.status_code == 403
    # native clients send no Origin and are unaffected
    async with await open_raw(gateway.url) as ws:
        await handshake(ws)


async def test_an_allowed_origin_may_connect(tmp_path: Path) -> None:
    config = ServerConfig(database=tmp_path / "gsv.db")
    async with serve(config, port=0) as first, GatewayClient(first.url, token=first.token) as c:
        await c.call(
            "config.set",
            {"path": "gateway.allowedOrigins", "value": ["https://chat.example.com/"]},
        )
        with pytest.raises(Exception, match="not an origin"):
            await c.call("config.set", {"path": "gateway.allowedOrigins", "value": ["*"]})
    async with serve(config, port=0) as gw:  # read at start
        async with await open_raw(gw.url, origin="https://chat.example.com") as ws:
            await handshake(ws, token=gw.token)
        with pytest.raises(InvalidStatus):
            await open_raw(gw.url, origin="https://chat.example.com.evil.example")


# -- TLS ---------------------------------------------------------------------------------


async def test_the_gateway_serves_wss_with_a_certificate(
    tmp_path: Path, certificate: tuple[Path, Path]
) -> None:
    cert, key = certificate
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    config = ServerConfig(database=tmp_path / "gsv.db", tls=context)
    async with serve(config, port=0) as gw:
        assert gw.url.startswith("wss://127.0.0.1:")
        async with GatewayClient(gw.url, token=gw.token, tls_ca=str(cert)) as client:
            assert (await client.call("config.get", {"path": "auth.token"}))["value"] == "***"
        with pytest.raises(Exception, match="cannot reach"):
            await GatewayClient(gw.url, token=gw.token, connect_timeout=5).connect()


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("auth.invite", {"role": "client"}),  # only nodes and channel adapters join
        ("auth.invite", {"role": "node", "subject": ""}),
        ("auth.invite", {"role": "node", "subject": "x" * 300}),
        ("auth.list", {"includeRevoked": "maybe"}),
        ("auth.invite", {"role": "node", "replace": "maybe"}),
        ("auth.revoke", {}),
        ("auth.revoke", {"id": "   "}),
        ("auth.revoke", {"all": True}),  # every credential of which role?
        ("auth.revoke", {"all": True, "role": "web", "id": "w1"}),
        ("auth.revoke", {"id": "w1", "role": "owner"}),
        ("security.audit", {"fix": "yes please"}),
        ("models.list", {"provider": ""}),
        ("models.test", {"model": 5}),
    ],
)
async def test_bad_input_to_the_new_methods_is_a_clear_400(
    gateway: RunningGateway, method: str, params: dict[str, Any]
) -> None:
    async with GatewayClient(gateway.url, token=gateway.token) as owner:
        with pytest.raises(Exception) as refused:
            await owner.call(method, params)
    assert getattr(refused.value, "code", None) == 400, refused.value
    assert method in str(refused.value)
