"""Secure by default, from the command line: a node on "another machine" joins with one short code,
`gsv nodes revoke` ends it at once, and `gsv security audit [--fix]` finds and repairs."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner
from typer.testing import Result

from gsv_cli.main import app
from gsv_core.gateway.server import RunningGateway
from gsv_core.localconfig import get_secret
from tests.threaded import owner_env
from tests.threaded import threaded_gateway
from tests.wire import handshake
from tests.wire import open_raw


@pytest.fixture
def live(tmp_path: Path) -> Iterator[RunningGateway]:
    with threaded_gateway(tmp_path / "gw" / "gsv.db") as running:
        yield running


def gsv(url: str, *args: str) -> Result:
    return CliRunner().invoke(app, ["--url", url, *args])


def wait_for(check: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def other_machine(tmp_path: Path) -> dict[str, str]:
    """The environment of a second machine: its own GSV_HOME and HOME, no owner token."""
    home = tmp_path / "other-machine"
    (home / "home").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GSV_", "XDG_"))}
    return {**env, "GSV_HOME": str(home / "gsv"), "HOME": str(home / "home")}


def test_a_node_on_another_machine_joins_with_one_code_and_is_revoked_at_once(
    live: RunningGateway, tmp_path: Path
) -> None:
    invited = gsv(live.url, "nodes", "invite")
    assert invited.exit_code == 0, invited.output
    code = re.search(r"join code: (\w{5}-\w{5})", invited.stdout)
    assert code is not None and "gsv node --join" in invited.output
    env = other_machine(tmp_path)
    workspace = tmp_path / "far-ws"
    workspace.mkdir()
    argv = [sys.executable, "-m", "gsv_cli", "--url", live.url, "node", "run",
            "--id", "far", "--workspace", str(workspace), "--no-log-stderr"]  # fmt: skip
    proc = subprocess.Popen([*argv, "--join", code.group(1)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        wait_for(lambda: "far" in live.gateway.nodes.online_ids(), "the node to join")
        # the node keeps its credential once it reads hello-ok, just after the gateway
        # lists it online
        kept = Path(env["GSV_HOME"]) / "config" / "secrets.toml"
        wait_for(kept.exists, "the node to keep its credential")
        secrets = kept.read_text()
        assert "node" in secrets and "far" in secrets  # its credential, on its machine
        listed = gsv(live.url, "nodes", "list")
        assert listed.exit_code == 0 and "far" in listed.stdout and "yes" in listed.stdout
        as_json = json.loads(gsv(live.url, "--json", "nodes", "list").stdout)
        assert [c["subject"] for n in as_json["nodes"] for c in n["credentials"]] == ["far"]
        # a channel's revoke command cannot end a node's credential
        wrong = gsv(live.url, "channels", "revoke", "far")
        assert wrong.exit_code != 0 and "no active credential of a channel adapter" in wrong.output
        assert "far" in live.gateway.nodes.online_ids()
        revoked = gsv(live.url, "nodes", "revoke", "far")
        assert revoked.exit_code == 0 and "disconnected 1" in revoked.stdout
        wait_for(lambda: "far" not in live.gateway.nodes.online_ids(), "the disconnect")
        time.sleep(1.5)  # the node retries with its revoked credential: still refused
        assert "far" not in live.gateway.nodes.online_ids()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    log = (Path(env["GSV_HOME"]) / "logs" / "node.log").read_text()
    assert "Unauthorized" in log and code.group(1) not in log


def test_a_wrong_join_code_fails_with_a_clear_message(live: RunningGateway, tmp_path: Path) -> None:
    env = other_machine(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "gsv_cli", "--url", live.url, "node", "run", "--id", "x",
         "--workspace", str(tmp_path), "--join", "AAAAA-BBBBB"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1
    assert "join code is wrong, expired or already used" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_local_node_gets_its_own_credential_with_the_owner_token(
    live: RunningGateway, tmp_path: Path
) -> None:
    """No typing on the gateway's machine, and the node never connects as the owner."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "gsv_cli", "--url", live.url, "node", "run", "--id", "here",
         "--workspace", str(tmp_path), "--no-log-stderr"],
        env=owner_env(live), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for(lambda: "here" in live.gateway.nodes.online_ids(), "the local node")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    stored = (Path(os.environ["GSV_HOME"]) / "config" / "secrets.toml").read_text()
    assert live.token not in stored  # the node kept its own credential, not the owner's
    credentials = gsv(live.url, "--json", "nodes", "list").stdout
    assert '"subject": "here"' in credentials


def join_raw(gw: RunningGateway, node_id: str, code: str) -> None:
    """A node joins with `code` over a raw socket (from this test's own event loop)."""

    async def join() -> None:
        async with await open_raw(gw.url) as ws:
            await handshake(ws, mode="node", client_id=node_id, token=None,
                            tools=[{"name": "Bash", "inputSchema": {"type": "object"}}],
                            auth={"joinCode": code})  # fmt: skip

    asyncio.run(join())


def test_a_code_without_an_id_cannot_join_as_a_known_node(
    live: RunningGateway, tmp_path: Path
) -> None:
    """`gsv node run --join` as the id of a node that has a credential: exit 1, saying what
    to ask the owner for; the node's credential stays. `--replace` makes a code that may."""
    bound = gsv(live.url, "--json", "nodes", "invite", "--id", "pi")
    join_raw(live, "pi", json.loads(bound.stdout)["code"])
    invited = gsv(live.url, "--json", "nodes", "invite")
    refused = subprocess.run(
        [sys.executable, "-m", "gsv_cli", "--url", live.url, "node", "run", "--id", "pi",
         "--workspace", str(tmp_path), "--join", json.loads(invited.stdout)["code"]],
        env=other_machine(tmp_path), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert refused.returncode == 1
    assert "'pi' already has a credential" in refused.stderr
    assert "gsv nodes invite --id pi" in refused.stderr and "Traceback" not in refused.stderr
    listed = json.loads(gsv(live.url, "--json", "nodes", "list").stdout)
    assert [c["subject"] for n in listed["nodes"] for c in n["credentials"]] == ["pi"]
    replacing = gsv(live.url, "nodes", "invite", "--replace")
    assert replacing.exit_code == 0, replacing.output
    assert "for any node id, even one that has a credential" in replacing.stdout
    assert "its earlier credential ends" in replacing.stderr
    as_json = json.loads(gsv(live.url, "--json", "nodes", "invite", "--replace").stdout)
    assert as_json["replace"] is True
    join_raw(live, "pi", as_json["code"])


def test_channel_adapters_get_invites_too(live: RunningGateway) -> None:
    invited = gsv(live.url, "channels", "invite", "matrix")
    assert invited.exit_code == 0 and "for channel matrix" in invited.stdout
    listed = gsv(live.url, "channels", "credentials")
    assert listed.exit_code == 0 and "no channel credentials" in listed.stdout


# -- gsv security audit ------------------------------------------------------------------


def test_a_fresh_install_audits_clean() -> None:
    """A gateway on the default paths, as `gsv up` starts it: nothing to report."""
    from gsv_core.paths import resolve_paths

    with threaded_gateway(resolve_paths().database) as gw:
        result = gsv(gw.url, "security", "audit")
        assert result.exit_code == 0, result.output
        assert "security audit: clean" in result.stdout
        assert "approval mode: allowlist (" in result.stdout
        as_json = json.loads(gsv(gw.url, "--json", "security", "audit").stdout)
        assert as_json == {"findings": [], "fixed": [], "gateway": "checked",
                           "approvalMode": as_json["approvalMode"]}  # fmt: skip
        assert as_json["approvalMode"].startswith("allowlist (")


def test_findings_exit_1_with_the_fixing_command_and_fix_repairs_them(
    live: RunningGateway,
) -> None:
    assert gsv(live.url, "config", "set", "channels.discord.dmPolicy", "open").exit_code == 0
    assert gsv(live.url, "config", "set", "auth.token", "short-token").exit_code == 0
    from gsv_core.localconfig import set_secret

    set_secret("gateway.token", "short-token")  # as the owner would after setting it
    found = gsv(live.url, "security", "audit")
    assert found.exit_code == 1
    assert "[channels] channel discord has dmPolicy: open" in found.stdout
    assert "fix: gsv config set channels.discord.dmPolicy pairing" in found.stdout
    assert "[token] the owner token is weak (11 characters)" in found.stdout
    as_json = json.loads(gsv(live.url, "--json", "security", "audit").stdout)
    assert {f["check"] for f in as_json["findings"]} >= {"channels", "token"}
    fixed = gsv(live.url, "security", "audit", "--fix")
    assert fixed.exit_code == 0, fixed.output
    assert "short-token" not in fixed.output
    new_token = get_secret("gateway.token")
    assert new_token and new_token != "short-token" and new_token == live.token
    assert gsv(live.url, "security", "audit").exit_code == 0


def test_the_audit_runs_its_local_checks_without_a_gateway(tmp_path: Path) -> None:
    result = gsv("ws://127.0.0.1:9/ws", "security", "audit")
    assert "gateway checks skipped" in result.output
    assert "[token] no owner token in the local secret store" in result.stdout
    assert result.exit_code == 1
