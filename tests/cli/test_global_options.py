"""The global options before or after the subcommand, on every command (issue 40.5):
`gsv config get model --json` is `gsv --json config get model`; a command's own option of
the same name wins (`gsv mcp add --url`); nothing after `--` moves."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from gsv_cli.global_options import after_command
from gsv_cli.global_options import declared_in
from gsv_cli.global_options import hoist
from gsv_cli.main import app
from gsv_core.gateway.server import RunningGateway
from tests.threaded import owner_env


def leaf_commands() -> Iterator[list[str]]:
    """Every command of the CLI as the words that name it."""
    root = typer.main.get_command(app)

    def walk(command: Any, path: list[str]) -> Iterator[list[str]]:
        if hasattr(command, "list_commands"):  # a group (typer's vendored click)
            for name in command.list_commands(typer.Context(command)):
                sub = command.get_command(typer.Context(command), name)
                if sub is not None and not sub.hidden:
                    yield from walk(sub, [*path, name])
        else:
            yield path

    yield from walk(root, [])


LEAVES = list(leaf_commands())


@pytest.mark.parametrize("path", LEAVES, ids=[" ".join(p) for p in LEAVES])
def test_every_command_takes_the_global_options_after_it(path: list[str]) -> None:
    args = hoist([*path, "--json", "--url", "ws://127.0.0.1:9/ws", "-t", "x", "--help"],
                 declared_in(app))  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, (args, result.output)
    assert "No such option" not in result.output


def test_a_commands_own_option_and_what_follows_double_dash_stay() -> None:
    declared = declared_in(app)
    line = ["mcp", "add", "web", "--url", "http://h/mcp", "--token", "t"]
    assert hoist(line, declared) == ["--token", "t", "mcp", "add", "web", "--url", "http://h/mcp"]
    passed_on = ["mcp", "add", "fs", "--", "server", "--json", "--url", "x"]
    assert hoist(passed_on, declared) == passed_on and not after_command(passed_on)
    assert hoist(["config", "get", "model", "-u=ws://h/ws"], declared) == [
        "-u=ws://h/ws", "config", "get", "model",
    ]  # fmt: skip
    assert hoist(["--json", "status"], declared) == ["--json", "status"]


def test_json_after_the_subcommand_through_the_real_entry_point(live: RunningGateway) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gsv_cli", "config", "get", "model", "--json", "--url", live.url],
        capture_output=True, text=True, timeout=120, env=owner_env(live),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert set(json.loads(done.stdout)) == {"provider", "id"}  # the value, as JSON
