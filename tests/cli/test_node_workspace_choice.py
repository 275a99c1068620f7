"""Review of the approval gate, login files (C): `gsv node run`, `start` and `install`
refuse the home directory and `/` as the node workspace, where the agent would write
login profiles and ssh keys without asking."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from gsv_cli.main import app

NOWHERE = "ws://127.0.0.1:9/ws"  # refused before any connection is tried


@pytest.mark.parametrize("command", ["run", "start", "install"])
def test_the_home_directory_is_refused_as_the_workspace(command: str) -> None:
    """--workspace ~ exits 1 saying why and how to choose another."""
    home = Path.home()
    result = CliRunner().invoke(app, ["--url", NOWHERE, "node", command, "--workspace", str(home)])
    assert result.exit_code == 1
    assert "is your home directory" in result.stderr
    assert "--workspace DIR" in result.stderr


def test_starting_from_the_home_directory_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --workspace the current directory is the workspace: from ~ it is refused."""
    monkeypatch.chdir(Path.home())
    result = CliRunner().invoke(app, ["--url", NOWHERE, "node", "run"])
    assert result.exit_code == 1
    assert "is your home directory" in result.stderr


def test_the_root_directory_is_refused_as_the_workspace() -> None:
    """--workspace / exits 1."""
    result = CliRunner().invoke(app, ["--url", NOWHERE, "node", "run", "--workspace", "/"])
    assert result.exit_code == 1
    assert "root of the file system" in result.stderr
