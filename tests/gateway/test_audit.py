"""The gateway's half of `gsv security audit`: `security.audit` over a real
socket, each finding with its fix, and `fix: true` repairing what it can."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gsv_core.client import GatewayClient
from gsv_core.gateway.audit import STALE_AFTER_MS
from gsv_core.gateway.audit import bind_findings
from gsv_core.gateway.listening import Listening
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from tests.wire import credential
from tests.wire import handshake
from tests.wire import node_runtime
from tests.wire import open_raw

TOOLS = [{"name": "Bash", "description": "run", "inputSchema": {"type": "object"}}]
SANDBOXED = {**node_runtime(TOOLS), "sandbox": {"backend": "bwrap", "network": False}}


async def _audit(gw: RunningGateway, fix: bool = False) -> dict[str, Any]:
    async with GatewayClient(gw.url, token=gw.token) as client:
        result: dict[str, Any] = await client.call("security.audit", {"fix": fix})
    return result


async def test_a_fresh_gateway_has_no_findings(gateway: RunningGateway) -> None:
    result = await _audit(gateway)
    assert (result["findings"], result["fixed"], result["approvalMode"]) == ([], [], "allowlist")


async def test_a_weak_approval_mode_is_flagged_only_with_nodes_connected(
    gateway: RunningGateway,
) -> None:
    await gateway.gateway.config.set("toolApproval.mode", "off")
    quiet = await _audit(gateway)
    assert quiet["findings"] == [] and quiet["approvalMode"] == "off"  # nothing runs anywhere
    async with await open_raw(gateway.url) as ws:
        await handshake(ws, mode="node", client_id="box", tools=TOOLS, nodeRuntime=SANDBOXED)
        found = (await _audit(gateway))["findings"]
        assert [f["check"] for f in found] == ["approvals"]
        assert found[0]["fix"] == "gsv config set toolApproval.mode allowlist"
        fixed = await _audit(gateway, fix=True)
        assert [f["check"] for f in fixed["fixed"]] == ["approvals"] and not fixed["findings"]
    assert gateway.gateway.config.setting("toolApproval.mode") == "allowlist"


async def test_a_node_whose_commands_are_not_sandboxed_is_flagged_with_the_fix(
    gateway: RunningGateway,
) -> None:
    """One finding per unsandboxed online node: its reason and how to get a sandbox; a
    node that says nothing of a sandbox (older) is flagged too; a sandboxed one is not."""
    unconfined = {"backend": "none", "network": True,
                  "reason": "bubblewrap (bwrap) is not installed: node commands run unconfined"}  # fmt: skip
    runtimes = {"good": SANDBOXED, "bare": {**node_runtime(TOOLS), "sandbox": unconfined},
                "old": node_runtime(TOOLS)}  # fmt: skip
    sockets = [await open_raw(gateway.url) for _ in runtimes]
    try:
        for ws, (node_id, runtime) in zip(sockets, runtimes.items(), strict=True):
            await handshake(ws, mode="node", client_id=node_id, tools=TOOLS, nodeRuntime=runtime)
        found = [f for f in (await _audit(gateway))["findings"] if f["check"] == "sandbox"]
    finally:
        for ws in sockets:
            await ws.close()
    assert [f["message"].split("'")[0] for f in found] == ["node bare", "node old"]
    assert "not installed" in found[0]["message"] and "apt install bubblewrap" in found[0]["fix"]
    assert "older than sandboxes" in found[1]["message"]


async def test_plain_http_origins_and_open_channels_are_found_and_fixed(
    gateway: RunningGateway,
) -> None:
    config = gateway.gateway.config
    origins = ["https://ok.example", "http://lan.example:8080", "http://localhost:3000"]
    await config.set("gateway.allowedOrigins", origins)
    await config.set("channels.discord.dmPolicy", "open")
    found = (await _audit(gateway))["findings"]
    assert [(f["check"], f["fixable"]) for f in found] == [("origins", True), ("channels", True)]
    assert "http://lan.example:8080" in found[0]["message"]
    assert found[1]["fix"] == "gsv config set channels.discord.dmPolicy pairing"
    fixed = await _audit(gateway, fix=True)
    assert len(fixed["fixed"]) == 2 and fixed["findings"] == []
    assert config.setting("gateway.allowedOrigins") == [
        "https://ok.example",
        "http://localhost:3000",
    ]
    assert config.setting("channels.discord.dmPolicy") == "pairing"


async def test_a_weak_token_is_replaced_and_the_new_one_returned_once(
    gateway: RunningGateway,
) -> None:
    await gateway.gateway.config.set("auth.token", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")  # 30, 1 char
    async with GatewayClient(gateway.url, token=gateway.token) as client:
        found = await client.call("security.audit", {})
        assert [f["check"] for f in found["findings"]] == ["token"]
        assert "token" not in found  # nothing rotated: no token in the reply
        fixed = await client.call("security.audit", {"fix": True})
    assert fixed["token"] == gateway.token != "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
    assert len(fixed["token"]) >= 40


async def test_stale_credentials_are_found_and_revoked(tmp_path: Path) -> None:
    now = [1_700_000_000_000]
    config = ServerConfig(database=tmp_path / "gsv.db", now_ms=lambda: now[0])
    async with serve(config, port=0) as gw:
        await credential(gw, "node", "old-laptop")
        assert (await _audit(gw))["findings"] == []
        now[0] += STALE_AFTER_MS + 24 * 3600 * 1000
        found = (await _audit(gw))["findings"]
        assert [f["check"] for f in found] == ["credentials"]
        assert "old-laptop" in found[0]["message"] and "unused for 31 days" in found[0]["message"]
        await _audit(gw, fix=True)
        assert await gw.gateway.auth.store.list_all() == []


def test_plain_ws_beyond_loopback_is_a_finding_tls_is_not() -> None:
    exposed = bind_findings(Listening("0.0.0.0", loopback=False, tls=False))
    assert [f.check for f in exposed] == ["bind"] and "--tls-cert" in exposed[0].fix
    assert not exposed[0].fixable
    assert bind_findings(Listening("0.0.0.0", loopback=False, tls=True)) == []
    assert bind_findings(Listening("127.0.0.1", loopback=True, tls=False)) == []
