"""`gsv doctor`: a healthy setup passes; each broken piece is named with its fix, and the
fixes `--fix` can make work. A real gateway, a fake provider on 127.0.0.1, a real node."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner
from typer.testing import Result

from gsv_cli.main import app
from gsv_core.gateway.server import RunningGateway
from gsv_core.node.sandbox.choose import probe_bwrap
from gsv_core.paths import resolve_paths
from gsv_core.service import background
from tests.fakes.llm_server import ErrorReply
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import fake_llm_server
from tests.threaded import owner_env
from tests.threaded import threaded_gateway

_BWRAP = shutil.which("bwrap")
# why bubblewrap cannot confine the test node here (None: it can)
SANDBOX_PROBLEM = "bwrap is not installed" if _BWRAP is None else probe_bwrap(_BWRAP)


def gsv(url: str, *args: str) -> Result:
    return CliRunner().invoke(app, ["--url", url, *args])


def checks(url: str, *args: str) -> dict[str, dict[str, object]]:
    result = gsv(url, "--json", "doctor", *args)
    return {c["name"]: c for c in json.loads(result.stdout)["checks"]}


@pytest.fixture
def healthy(tmp_path: Path) -> Iterator[tuple[RunningGateway, FakeLLMServer]]:
    """A gateway on the default paths, a provider that answers and a node online."""
    with fake_llm_server() as llm, threaded_gateway(resolve_paths().database) as gw:
        provider = json.dumps({"api": "openai", "baseUrl": llm.openai_base_url})
        assert gsv(gw.url, "config", "set", "providers.local", provider).exit_code == 0
        model = json.dumps({"provider": "local", "id": "fake-small"})
        assert gsv(gw.url, "config", "set", "model", model).exit_code == 0
        node = subprocess.Popen(
            [sys.executable, "-m", "gsv_cli", "--url", gw.url, "node", "run", "--id", "doc",
             "--workspace", str(tmp_path), "--no-log-stderr"],
            env=owner_env(gw), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 30
            while "doc" not in gw.gateway.nodes.online_ids():
                assert time.monotonic() < deadline, "the node did not connect"
                time.sleep(0.05)
            yield gw, llm
        finally:
            node.send_signal(signal.SIGTERM)
            node.wait(timeout=30)


def test_a_healthy_setup_passes(healthy: tuple[RunningGateway, FakeLLMServer]) -> None:
    """Every check passes, the node's sandbox among them (where bubblewrap works: where it
    does not, that is the one failure, with its fix)."""
    gw, _ = healthy
    result = gsv(gw.url, "doctor")
    rows = result.stdout.splitlines()
    if SANDBOX_PROBLEM is None:
        assert result.exit_code == 0, result.output
        assert "FAIL" not in result.stdout
        assert "ok    sandbox   doc: bwrap, no network" in rows
    else:
        failing = [row for row in rows if row.startswith("FAIL")]
        assert len(failing) == 1 and "node doc's commands are not sandboxed" in failing[0]
    for line in ("gateway", "token", "model", "provider", "test call", "nodes", "database"):
        assert any(row.startswith(f"ok    {line}") for row in rows), line
    assert "local/fake-small, ready" in result.stdout and "online: doc" in result.stdout


def test_each_broken_piece_is_named_with_its_fix(
    healthy: tuple[RunningGateway, FakeLLMServer],
) -> None:
    gw, llm = healthy
    llm.enqueue(ErrorReply(404, "model fake-small not found"))
    found = checks(gw.url)
    assert found["provider"]["ok"] is True and found["test call"]["ok"] is False
    assert "not found" in str(found["test call"]["message"])
    llm.api_key = "sk-right"  # the provider now refuses the (missing) key
    found = checks(gw.url)
    assert found["provider"]["ok"] is False
    assert found["provider"]["fix"] == "gsv models list --provider local"
    gsv(gw.url, "config", "set", "model", json.dumps({"provider": "nope", "id": "x"}))
    found = checks(gw.url)
    assert found["model"]["ok"] is False and "nope" in str(found["model"]["fix"])
    bad_token = CliRunner().invoke(app, ["--url", gw.url, "--token", "wrong", "doctor"])
    assert bad_token.exit_code == 1
    assert "FAIL  token" in bad_token.stdout and "GSV_TOKEN" in bad_token.stdout


def test_stale_pid_files_and_wide_modes_are_fixed(live: RunningGateway) -> None:
    background.pid_file("node").parent.mkdir(parents=True, exist_ok=True)
    background.pid_file("node").write_text("999999999\n")  # no such process
    log = resolve_paths().log_file("gateway")
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("old\n")
    os.chmod(log, 0o644)
    found = checks(live.url)
    assert found["pid file"]["ok"] is False and "999999999" in str(found["pid file"]["message"])
    assert found["files"]["ok"] is False
    fixed = checks(live.url, "--fix")
    assert fixed["pid file"]["fixed"] is True and fixed["files"]["fixed"] is True
    assert not background.pid_file("node").exists()
    assert log.stat().st_mode & 0o777 == 0o600
    again = checks(live.url)
    assert again["pid file"]["ok"] is True and "files" not in again


def test_no_gateway_and_a_damaged_database() -> None:
    database = resolve_paths().database
    database.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(database) as conn:
        conn.execute("CREATE TABLE t (x)")
        conn.executemany("INSERT INTO t VALUES (?)", [("x" * 500,)] * 200)
    data = bytearray(database.read_bytes())
    data[4096 * 2 : 4096 * 2 + 64] = b"\xff" * 64  # scribble over a b-tree page
    database.write_bytes(bytes(data))
    result = gsv("ws://127.0.0.1:9/ws", "doctor")
    assert result.exit_code == 1
    assert "FAIL  gateway" in result.stdout and "fix: gsv up" in result.stdout
    assert "FAIL  database" in result.stdout and ".recover" in result.stdout
    assert "Traceback" not in result.output


def test_a_rejected_key_fails_the_doctor_and_a_cooling_one_is_told() -> None:
    """Keys set aside are checks by fingerprint: rejected fails with the fix, cooling passes."""
    from gsv_cli.commands.doctor import _keys
    from tests.cli.test_status_command import KEY_MARKS

    rejected, cooling = _keys(KEY_MARKS)
    assert not rejected.ok and rejected.message.startswith("openai key-3fa2b1c9 key rejected")
    assert rejected.fix.startswith("gsv config set apiKeys.openai NEW_KEY")
    assert cooling.ok and "cooling down until" in cooling.message
