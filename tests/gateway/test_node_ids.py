"""A node id belongs to its credential (issue 42.5): a join code made without `--id` cannot
take an id that has a credential, online or not, revoked or not, unless the owner made it
with `replace`; a code is spent only when its connection is accepted, so a refused
connect changes nothing. A real gateway, a real node daemon and raw frames."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from tests.gateway.test_auth import TOOLS
from tests.gateway.test_auth import _node
from tests.gateway.test_auth import _refused
from tests.node.test_daemon import node_online
from tests.node.test_daemon import running_node
from tests.node.test_daemon import until
from tests.wire import connect_params
from tests.wire import credential
from tests.wire import handshake
from tests.wire import open_raw
from tests.wire import request


async def invite(gw: RunningGateway, **params: Any) -> dict[str, Any]:
    async with GatewayClient(gw.url, token=gw.token) as owner:
        result: dict[str, Any] = await owner.call("auth.invite", {"role": "node", **params})
    return result


async def join(gw: RunningGateway, node_id: str, code: str) -> dict[str, Any]:
    """Join as `node_id` with `code` on a raw socket (closed after); its hello-ok."""
    async with await open_raw(gw.url) as ws:
        return await handshake(ws, mode="node", client_id=node_id, tools=TOOLS, token=None,
                               auth={"joinCode": code})  # fmt: skip


async def active(gw: RunningGateway) -> list[tuple[str, str]]:
    """(subject, credential id) of every active credential."""
    return [(c.subject, c.id) for c in await gw.gateway.auth.store.list_all()]


async def unspent_codes(gw: RunningGateway) -> int:
    return int(
        await gw.gateway.db.read(
            lambda conn: conn.execute(
                "SELECT count(*) FROM join_codes WHERE used_at IS NULL"
            ).fetchone()[0]
        )
    )


def ident(token: str | None) -> str:
    assert token is not None
    return token.split(".", 1)[0]


async def test_a_code_without_an_id_cannot_take_a_connected_nodes_id(
    gateway: RunningGateway, tmp_path: Path
) -> None:
    """The impostor hears 403 naming what to ask for; the real node keeps its credential
    and its socket, connects again with that credential, and the code is not spent."""
    async with running_node(gateway.url, tmp_path / "ws", node_id="laptop") as real:
        await asyncio.wait_for(real.connected.wait(), 30)  # joined: its credential is kept
        token = real.settings.token
        code = (await invite(gateway))["code"]
        error = await _refused(gateway.url, _node("laptop", joinCode=code))
        assert error["code"] == 403
        assert "'laptop' already has a credential" in error["message"]
        assert (
            "gsv nodes invite --id laptop" in error["message"] and "--replace" in error["message"]
        )
        assert await active(gateway) == [("laptop", ident(token))]
        online = gateway.gateway.nodes.online("laptop")
        assert online is not None and online.peer.credential_id == ident(token)
        online.peer.close()  # the network drops: the node comes back with its credential
        await until(
            lambda: (
                (n := gateway.gateway.nodes.online("laptop")) is not None
                and n.peer is not online.peer
            ),
            "the node back on a new socket",
        )
        assert real.settings.token == token
    assert await unspent_codes(gateway) == 1
    assert (await join(gateway, "desk", code))["credential"]  # a free id: the code still works


async def test_a_code_without_an_id_cannot_take_a_known_offline_nodes_id(
    gateway: RunningGateway, tmp_path: Path
) -> None:
    """Offline, the id is still its credential's; revoked, still known: 403 both times,
    and the node itself connects again with its credential."""
    token = await credential(gateway, "node", "pi")
    code = (await invite(gateway))["code"]
    assert (await _refused(gateway.url, _node("pi", joinCode=code)))["code"] == 403
    assert await active(gateway) == [("pi", ident(token))]
    async with running_node(gateway.url, tmp_path / "ws", node_id="pi", token=token):
        await node_online(gateway, "pi")
    async with GatewayClient(gateway.url, token=gateway.token) as owner:
        await owner.call("auth.revoke", {"id": "pi"})
    error = await _refused(gateway.url, _node("pi", joinCode=code))
    assert error["code"] == 403 and gateway.gateway.nodes.online_ids() == []
    assert await unspent_codes(gateway) == 1


async def test_a_node_seen_without_a_credential_keeps_its_id(gateway: RunningGateway) -> None:
    """A node the gateway knew before credentials (a row in `nodes`, none in
    `credentials`, as an older install has): a code made for no node cannot take its id
    (its approval rules and skills are keyed by it); a code made for it can."""
    await gateway.gateway.db.write(
        lambda conn: conn.execute(
            "INSERT INTO nodes (node_id, tools, first_seen_at, last_seen_at) VALUES (?, ?, 1, 1)",
            ("old-box", "[]"),
        )
    )
    code = (await invite(gateway))["code"]
    error = await _refused(gateway.url, _node("old-box", joinCode=code))
    assert error["code"] == 403 and "'old-box' is known to this gateway" in error["message"]
    assert "gsv nodes invite --id old-box" in error["message"]
    assert await unspent_codes(gateway) == 1 and await active(gateway) == []
    made = (await invite(gateway, subject="old-box"))["code"]
    joined = await join(gateway, "old-box", made)
    assert await active(gateway) == [("old-box", ident(joined["credential"]))]


async def test_a_replace_code_takes_a_known_id_and_ends_its_old_credential(
    gateway: RunningGateway,
) -> None:
    """The owner's explicit `replace`: the newcomer joins under the offline node's id; the
    old credential is revoked in the same step and refused from then on."""
    old = await credential(gateway, "node", "pi")
    invited = await invite(gateway, replace=True)
    assert invited["replace"] is True and "subject" not in invited
    new = (await join(gateway, "pi", invited["code"]))["credential"]
    assert await active(gateway) == [("pi", ident(new))]
    assert (await _refused(gateway.url, _node("pi", token=old)))["code"] == 401
    assert await unspent_codes(gateway) == 0


@pytest.mark.parametrize(
    "made", [{"subject": "laptop"}, {"replace": True}], ids=["--id", "--replace"]
)
async def test_a_code_for_a_connected_node_spends_nothing_on_409(
    gateway: RunningGateway, tmp_path: Path, made: dict[str, Any]
) -> None:
    """A code that may take the id, while the node is connected and answering: 409, and
    neither the code is spent nor the node's credential revoked; once the node is
    offline the same code takes its place."""
    async with running_node(gateway.url, tmp_path / "ws", node_id="laptop") as real:
        await asyncio.wait_for(real.connected.wait(), 30)  # joined: its credential is kept
        token = real.settings.token
        code = (await invite(gateway, **made))["code"]
        async with await open_raw(gateway.url) as ws:
            reply = await request(ws, "connect", _node("laptop", joinCode=code))
        assert reply["error"]["code"] == 409 and "already connected" in reply["error"]["message"]
        assert await active(gateway) == [("laptop", ident(token))]
        assert await unspent_codes(gateway) == 1
        assert gateway.gateway.nodes.online("laptop") is not None
    new = (await join(gateway, "laptop", code))["credential"]
    assert await active(gateway) == [("laptop", ident(new))]


async def test_two_connects_racing_with_one_code_mint_one_credential(
    gateway: RunningGateway,
) -> None:
    """Both may pass the check; only one spends the code. The other is refused (401,
    socket closed) and never registered."""
    code = (await invite(gateway))["code"]
    sockets = [await open_raw(gateway.url) for _ in range(2)]
    try:
        replies = await asyncio.gather(
            *(request(ws, "connect", _node(f"racer-{i}", joinCode=code))
              for i, ws in enumerate(sockets))
        )  # fmt: skip
    finally:
        for ws in sockets:
            await ws.close()
    won = [i for i, reply in enumerate(replies) if reply["ok"]]
    assert len(won) == 1, replies
    (lost,) = [reply for reply in replies if not reply["ok"]]
    assert lost["error"]["code"] == 401 and "join code" in lost["error"]["message"]
    assert [subject for subject, _ in await active(gateway)] == [f"racer-{won[0]}"]
    await until(lambda: gateway.gateway.nodes.online_ids() == [], "both sockets gone")


async def test_a_refused_connect_changes_nothing(gateway: RunningGateway) -> None:
    """A code tried as the wrong role, or for a malformed node: refused, and the code
    is still there for the node it was meant for."""
    code = (await invite(gateway))["code"]
    channel = connect_params(mode="channel", client_id="bridge", token=None, channel="matrix",
                             auth={"joinCode": code})  # fmt: skip
    assert (await _refused(gateway.url, channel))["code"] == 401
    async with await open_raw(gateway.url) as ws:
        shape = await request(ws, "connect", _node("bad__id", joinCode=code))
    assert shape["error"]["code"] == 103
    assert await unspent_codes(gateway) == 1 and await active(gateway) == []
    assert (await join(gateway, "fresh", code))["credential"]


async def test_a_channel_code_without_a_channel_cannot_take_a_known_channel(
    gateway: RunningGateway,
) -> None:
    """The same rule for channel adapters: the channel belongs to its credential."""
    await credential(gateway, "channel", "matrix")
    async with GatewayClient(gateway.url, token=gateway.token) as owner:
        code = (await owner.call("auth.invite", {"role": "channel"}))["code"]
    params = connect_params(mode="channel", client_id="bridge", token=None, channel="matrix",
                            auth={"joinCode": code})  # fmt: skip
    error = await _refused(gateway.url, params)
    assert error["code"] == 403 and "gsv channels invite matrix" in error["message"]
