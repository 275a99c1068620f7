"""`gsv skills list|status|update|show` against a real gateway (thread): tables, --json,
exit codes and errors on stderr."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner
from typer.testing import Result

from gsv_cli.main import app
from gsv_core.gateway.server import RunningGateway
from tests.skills.conftest import skill_text
from tests.skills.conftest import write_skill
from tests.threaded import threaded_gateway


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return tmp_path / "data" / "workspace"


@pytest.fixture
def live(tmp_path: Path, workspace: Path) -> Iterator[RunningGateway]:
    with threaded_gateway(tmp_path / "data" / "gsv.db") as running:
        write_skill(workspace, "notes", skill_text(description="Keep notes tidy."))
        write_skill(workspace, "notes", skill_text(description="Ops notes."), agent="ops")
        write_skill(workspace, "broken", "---\nname: [oops\n---\n")
        yield running


def gsv(url: str, *args: str) -> Result:
    return CliRunner().invoke(app, ["--url", url, *args], env={"COLUMNS": "200"})


def test_list_shows_every_skill_with_whether_it_is_usable(live: RunningGateway) -> None:
    """A table row per skill: name, usable, global/agent, description (bundled included)."""
    listed = gsv(live.url, "skills", "list")
    assert listed.exit_code == 0, listed.stderr
    rows = [line.split() for line in listed.stdout.splitlines()[1:] if line[:1].strip()]
    lines = {row[0]: row for row in rows}  # long descriptions wrap onto indented lines
    assert set(lines) == {"broken", "git-commit", "gsv-cli", "notes", "tmux"}
    assert lines["notes"][:3] == ["notes", "yes", "global"]
    assert lines["tmux"][1] == "no" and lines["broken"][1] == "no"
    ops = gsv(live.url, "skills", "list", "--agent", "ops")
    assert "agent" in next(line for line in ops.stdout.splitlines() if "Ops notes." in line)


def test_list_and_status_print_json_when_asked(live: RunningGateway) -> None:
    """--json (local or global) prints the gateway's data as is."""
    listed = json.loads(gsv(live.url, "skills", "list", "--json").stdout)
    assert listed["count"] == len(listed["skills"])
    assert {skill["name"] for skill in listed["skills"]} >= {"notes", "tmux"}
    status = json.loads(gsv(live.url, "--json", "skills", "status", "ops").stdout)
    assert status["agentId"] == "ops" and status["nodes"] == []
    notes = next(skill for skill in status["skills"] if skill["name"] == "notes")
    assert notes["location"] == "agents/ops/skills/notes/SKILL.md"


def test_status_explains_why_each_skill_is_not_usable(live: RunningGateway) -> None:
    """The status lists nodes (none here) and each skill's nodes or reasons."""
    shown = gsv(live.url, "skills", "status")
    assert shown.exit_code == 0, shown.stderr
    out = shown.stdout
    assert "agent main" in out and "(no connected nodes)" in out
    assert "any (needs no node)" in next(line for line in out.splitlines() if "notes" in line)
    tmux = next(line for line in out.splitlines() if line.startswith("tmux"))
    assert (
        "no connected nodes; it needs capabilities shell.exec; os linux or macos; bins tmux" in tmux
    )
    assert "invalid YAML frontmatter" in next(line for line in out.splitlines() if "broken" in line)


def test_update_reports_the_probe_round(live: RunningGateway) -> None:
    """update prints how many nodes were probed, then the status; --json adds the counts."""
    updated = gsv(live.url, "skills", "update", "--force")
    assert updated.exit_code == 0, updated.stderr
    assert updated.stdout.startswith("probed 0 node(s); skipped: none\n")
    assert "skills:" in updated.stdout
    data = json.loads(gsv(live.url, "skills", "update", "main", "--json").stdout)
    assert (data["updatedNodeCount"], data["skippedNodeIds"], data["errors"]) == (0, [], [])


def test_show_prints_the_skill_file_the_agent_reads(live: RunningGateway, workspace: Path) -> None:
    """show NAME prints the agent's own copy when it has one, else the global file."""
    shown = gsv(live.url, "skills", "show", "notes")
    assert shown.exit_code == 0, shown.stderr
    assert shown.stdout == (workspace / "skills" / "notes" / "SKILL.md").read_text()
    ops = gsv(live.url, "skills", "show", "notes", "--agent", "ops", "--json")
    data = json.loads(ops.stdout)
    assert data["content"].startswith("---\ndescription: Ops notes.")
    assert data["location"] == "agents/ops/skills/notes/SKILL.md"


def test_unknown_skills_and_bad_agents_are_errors_on_stderr(live: RunningGateway) -> None:
    """A missing skill or an invalid agent id: red message on stderr, exit 1."""
    missing = gsv(live.url, "skills", "show", "nope")
    assert missing.exit_code == 1 and missing.stdout == ""
    assert "no skill named 'nope'" in missing.stderr
    bad = gsv(live.url, "skills", "status", "../etc")
    assert bad.exit_code == 1 and "invalid agentId" in bad.stderr


def test_bad_options_are_usage_errors() -> None:
    """--timeout outside 1..120 seconds is refused by the CLI itself (exit 2)."""
    result = gsv("ws://127.0.0.1:9/ws", "skills", "update", "--timeout", "0")
    assert result.exit_code == 2


def test_an_unreachable_gateway_exits_3() -> None:
    """No gateway: the hint how to start one, exit 3."""
    result = gsv("ws://127.0.0.1:9/ws", "skills", "list")
    assert result.exit_code == 3 and "gsv gateway run" in result.stderr
