"""`gsv status`: one screen, safe to paste, against a real gateway (and none at all)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from typer.testing import CliRunner
from typer.testing import Result

from gsv_cli.main import app
from gsv_core import __version__
from gsv_core.gateway.server import RunningGateway
from tests.waiting import until


def gsv(url: str, *args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(app, ["--url", url, *args], env=env)


def test_a_fresh_gateway_says_what_is_missing(live: RunningGateway) -> None:
    """No key yet: the model line says so and how to fix it; no nodes, no channels."""
    shown = gsv(live.url, "status", env={"ANTHROPIC_API_KEY": ""})
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert lines[0].startswith(f"gateway   {live.url}  (gsv {__version__}, up ")
    assert "model     anthropic/claude-sonnet-4-20250514  NOT READY:" in lines[1]
    assert "gsv config set apiKeys.anthropic" in lines[1]
    assert lines[2].startswith("nodes     none")
    assert lines[3] == "channels  none running"
    assert lines[4].startswith("cron      0 jobs, 0 due")
    assert lines[5] == "waiting   0 approvals, 0 pairing requests"
    assert lines[6] == "budget    $0.00 of $1.00 by background work today"  # on by default


def test_the_budget_line_shows_each_limit_and_what_is_reached(live: RunningGateway) -> None:
    assert gsv(live.url, "config", "set", "budget.daily", "0").exit_code == 0
    assert gsv(live.url, "config", "set", "budget.background", "false").exit_code == 0
    line = gsv(live.url, "status").stdout.splitlines()[6]
    assert line == "budget    $0.00 of $0.00 today (REACHED)"
    assert gsv(live.url, "config", "set", "budget.daily", "false").exit_code == 0
    line = gsv(live.url, "status").stdout.splitlines()[6]
    assert line == "budget    no limits: gsv config set budget.daily USD"


def test_a_ready_model_and_no_secret_in_the_output(live: RunningGateway) -> None:
    secret = "sk-ant-status-secret-0123456789"
    assert gsv(live.url, "config", "set", "apiKeys.anthropic", secret).exit_code == 0
    shown = gsv(live.url, "status")
    assert "anthropic/claude-sonnet-4-20250514  ready" in shown.stdout
    as_json = gsv(live.url, "--json", "status").stdout
    assert secret not in shown.output + as_json and live.token not in as_json
    data = json.loads(as_json)
    assert data["gateway"] == {"url": live.url, "reachable": True, "problem": None}
    assert data["model"] == {"provider": "anthropic", "id": "claude-sonnet-4-20250514",
                             "ready": True}  # fmt: skip
    assert data["cli"] == data["version"] == __version__


def test_no_gateway_exits_1_with_the_fix() -> None:
    shown = gsv("ws://127.0.0.1:9/ws", "status")
    assert shown.exit_code == 1
    assert "gateway   ws://127.0.0.1:9/ws: not reachable" in shown.stdout
    assert "gsv up" in shown.stderr and "Traceback" not in shown.output
    data = json.loads(gsv("ws://127.0.0.1:9/ws", "--json", "status").stdout)
    assert data["gateway"]["reachable"] is False and data["gateway"]["problem"]


def test_each_node_is_shown_with_its_sandbox_and_an_unsandboxed_one_with_the_fix() -> None:
    """The nodes line names each node's sandbox; an online node without one gets a
    warning line with its reason and fix (an offline one does not)."""
    from gsv_cli.commands.status import render

    def node(node_id: str, online: bool, sandbox: dict[str, object] | None) -> dict[str, object]:
        return {"nodeId": node_id, "online": online, "tools": ["Bash"], "sandbox": sandbox}

    reason = "bubblewrap (bwrap) is not installed: node commands run unconfined; install it"
    found = {
        "version": __version__, "startedAt": 0,
        "model": {"provider": "p", "id": "m", "ready": True},
        "nodes": [node("box", True, {"backend": "bwrap", "network": False}),
                  node("bare", True, {"backend": "none", "network": True, "reason": reason}),
                  node("old", False, None)],
        "channels": [], "cron": {"count": 0, "dueCount": 0},
        "pendingApprovals": 0, "pendingPairings": 0,
    }  # fmt: skip
    lines = render("ws://x/ws", found).splitlines()
    assert lines[2] == (
        "nodes     2 of 3 online: box (online, 1 tools, bwrap, no network), "
        "bare (online, 1 tools, NOT SANDBOXED), "
        "old (offline, 1 tools, sandbox unknown (a node older than sandboxes))"
    )
    assert (
        lines[3].strip().startswith("WARNING: node bare's commands are not sandboxed: bubblewrap")
    )
    assert "sudo apt install bubblewrap" in lines[3]
    assert len([line for line in lines if "WARNING" in line]) == 1  # not the offline one


# a rejected key and a cooling one, as gateway.status lists them (docs/models.md#key-pools)
KEY_MARKS = [
    {"provider": "openai", "key": "key-3fa2b1c9", "state": "rejected",
     "reason": "key rejected", "until": None, "since": 0},
    {"provider": "openai", "key": "key-91c0d2aa", "state": "cooling",
     "reason": "rate limited", "until": 4_102_444_800_000, "since": 0},
]  # fmt: skip


def test_keys_set_aside_are_listed_by_fingerprint_with_how_long() -> None:
    """A rejected key says how to bring it back; a cooling one until when."""
    from gsv_cli.commands.status import key_lines

    first, second = key_lines(KEY_MARKS)
    assert first == (
        "keys      openai key-3fa2b1c9 key rejected, not tried until you set it again "
        "or `gsv models test`"
    )
    assert second.startswith("keys      openai key-91c0d2aa rate limited, cooling down until 2")


def test_the_database_line_shows_its_size_on_disk(live: RunningGateway, tmp_path: Path) -> None:
    """Once writes pause the WAL is truncated: status then gives the database file's size
    to the byte in --json, in MB on the screen, and the event loop's task count."""
    from gsv_core.storage.db import file_sizes

    database = tmp_path / "data" / "gsv.db"
    asyncio.run(until(lambda: file_sizes(database).wal == 0, "the WAL truncated"))
    data = json.loads(gsv(live.url, "--json", "status").stdout)
    assert data["storage"] == {"databaseBytes": database.stat().st_size, "walBytes": 0}
    assert data["storage"]["databaseBytes"] > 0
    assert isinstance(data["tasks"], int) and data["tasks"] > 0
    shown = gsv(live.url, "status").stdout.splitlines()
    megabytes = f"{database.stat().st_size / 1_000_000:.1f} MB"
    assert f"database  {megabytes} (WAL 0.0 MB)" in shown
