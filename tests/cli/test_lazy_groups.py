"""A run builds only the command it names (gsv_cli.main.build_app): `gsv sessions ...`
imports the sessions group and no other; `gsv --help`, completion and unknown names get
the whole app."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import typer.main

from gsv_cli.commands.completions import COMPLETE_VAR
from gsv_cli.entries import ENTRIES
from gsv_cli.main import build_app
from gsv_cli.main import invoked
from tests.test_import_hygiene import HELP

# after the help probe of tests/test_import_hygiene.py: the command modules loaded
LISTED = 'print(json.dumps(sorted(m for m in sys.modules if m.startswith("gsv_cli.commands."))))'


def command_modules_after(argv: list[str]) -> set[str]:
    probe = "import json, sys\n" + HELP.format(argv=argv) + LISTED
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["sessions", "list"], "sessions"),
        (["--url", "ws://h/ws", "--json", "cron", "list"], "cron"),
        (["-t", "chat", "chat", "hi"], "chat"),  # -t takes a value, even a command's name
        (["--url=ws://h/ws", "node", "--help"], "node"),
        (["pair", "list"], "pair"),
        (["--help"], None),
        ([], None),
        (["bogus", "list"], None),
    ],
)
def test_the_command_a_run_names_is_found_after_the_global_options(
    args: list[str], named: str | None
) -> None:
    """Global options (and their values) are passed over; an unknown word builds all."""
    assert invoked(args) == named


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"COMP_WORDS": "gsv sessions li", "COMP_CWORD": "2"}, "sessions"),  # bash
        ({"COMP_WORDS": "gsv sessions ", "COMP_CWORD": "2"}, "sessions"),
        ({"COMP_WORDS": "gsv ses", "COMP_CWORD": "1"}, None),  # the first word: all names
        ({"COMP_WORDS": "gsv --url ws://h/ws cron a", "COMP_CWORD": "4"}, "cron"),
        ({"_TYPER_COMPLETE_ARGS": "gsv cron "}, "cron"),  # zsh, fish
        ({"_TYPER_COMPLETE_ARGS": "gsv cro"}, None),
        ({"COMP_WORDS": "gsv cron", "COMP_CWORD": "junk"}, None),
    ],
)
def test_completion_builds_only_the_group_it_completes_in(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], named: str | None
) -> None:
    """Completing inside a group needs that group alone; the first word needs every name."""
    monkeypatch.setenv(COMPLETE_VAR, "complete_bash")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert invoked(["ignored"]) == named


def test_completion_inside_a_group_answers_its_commands() -> None:
    """A real completion run (as bash asks) lists the group's commands."""
    env = {**os.environ, COMPLETE_VAR: "complete_bash", "COMP_WORDS": "gsv cron r",
           "COMP_CWORD": "2"}  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "gsv_cli"], capture_output=True, text=True,
                          env=env, timeout=60)  # fmt: skip
    assert done.stdout.split() == ["remove", "run", "runs"]


def test_a_lean_app_holds_the_named_command_and_the_whole_app_all() -> None:
    """build_app("sessions") has the sessions group only; build_app() every entry."""
    lean = typer.main.get_command(build_app("sessions"))
    whole = typer.main.get_command(build_app())
    assert isinstance(lean, typer.core.TyperGroup) and isinstance(whole, typer.core.TyperGroup)
    assert set(lean.commands) == {"sessions"}
    assert set(whole.commands) == {entry.name for entry in ENTRIES}
    assert set(lean.commands["sessions"].commands) == set(whole.commands["sessions"].commands)


def test_a_group_run_imports_that_group_alone() -> None:
    """`gsv sessions --help` imports the sessions module (and completions, for its
    variable name) but no other group; `gsv --help` imports them all."""
    lean = command_modules_after(["sessions", "--help"])
    assert lean == {"gsv_cli.commands.sessions", "gsv_cli.commands.completions"}
    whole = command_modules_after(["--help"])
    assert {f"gsv_cli.commands.{entry.module}" for entry in ENTRIES} <= whole
