"""Completing the first word from the ENTRIES table (gsv_cli.first_word) prints what the
full app prints, in bash, zsh and fish, and leaves everything else to the full app."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import pytest
import typer
import typer.main

from gsv_cli.commands.completions import COMPLETE_VAR
from gsv_cli.entries import ENTRIES
from gsv_cli.entries import Entry
from gsv_cli.first_word import Candidate
from gsv_cli.first_word import answer
from gsv_cli.first_word import completion_args
from gsv_cli.main import build_app

# each run writes, after its own output, the command modules it imported (stderr's last line)
RUN = """
import sys
try:
    {call}
finally:
    names = (m for m in sys.modules if m.startswith("gsv_cli.commands."))
    sys.stderr.write("\\n" + " ".join(sorted(names)))
"""
# the gsv script's way, and the full app's own (the way every run took before the table)
FAST = "from gsv_cli.main import main; main()"
FULL = "from gsv_cli.main import build_app; build_app()(prog_name='gsv')"

LINES = ["gsv ", "gsv c", "gsv cr", "gsv x", "gsv -", "gsv --u"]
# the completion requests of typer's scripts for each shell (completions/), by line
SHELLS = {
    "bash": lambda line: {COMPLETE_VAR: "complete_bash", "COMP_WORDS": line, "COMP_CWORD": "1"},
    "zsh": lambda line: {COMPLETE_VAR: "complete_zsh", "_TYPER_COMPLETE_ARGS": line},
    "fish get-args": lambda line: {
        COMPLETE_VAR: "complete_fish",
        "_TYPER_COMPLETE_FISH_ACTION": "get-args",
        "_TYPER_COMPLETE_ARGS": line,
    },
    "fish is-args": lambda line: {
        COMPLETE_VAR: "complete_fish",
        "_TYPER_COMPLETE_FISH_ACTION": "is-args",
        "_TYPER_COMPLETE_ARGS": line,
    },
}


def run(call: str, env: dict[str, str]) -> tuple[str, int, set[str]]:
    """stdout, exit status and the command modules imported by one completion run."""
    done = subprocess.run(
        [sys.executable, "-c", RUN.format(call=call)],
        # click lists -h/--help in a set's order: one hash seed for both runs
        env={**os.environ, "PYTHONHASHSEED": "0", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    *errors, modules = done.stderr.split("\n")
    assert not "".join(errors).strip(), done.stderr
    return done.stdout, done.returncode, set(modules.split())


@pytest.mark.parametrize("line", LINES)
@pytest.mark.parametrize("shell", SHELLS)
def test_first_word_completion_prints_what_the_full_app_prints(shell: str, line: str) -> None:
    """Each shell gets the same words, help and exit status either way; the table answers
    a name in first place without building the app, and the app answers options."""
    env = SHELLS[shell](line)
    *fast, built = run(FAST, env)
    *full, _ = run(FULL, env)
    assert fast == full
    if line.endswith("-") or "--" in line:
        assert "gsv_cli.commands.chat" in built  # the app's options: the full app answered
    else:
        # only the module where COMPLETE_VAR lives: the table answered, not the app
        assert built == {"gsv_cli.commands.completions"}, "an entry without short_help?"


def test_every_visible_command_has_its_short_help_recorded() -> None:
    """ENTRIES holds, for every name completion offers, the help click shows beside it."""
    group = typer.main.get_command(build_app())
    assert isinstance(group, typer.main.TyperGroup)
    shown = {
        name: command.get_short_help_str()
        for name in group.list_commands(typer.Context(group))
        if (command := group.get_command(typer.Context(group), name)) and not command.hidden
    }
    recorded = {entry.name: entry.short_help for entry in ENTRIES if entry.name in shown}
    assert recorded == shown, (
        "copy the help completion shows into Entry.short_help (gsv_cli.entries)"
    )


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda entry: entry.name)
def test_entry_group_says_whether_it_names_a_group(entry: Entry) -> None:
    """Entry.group (read from the attribute's name) matches what the attribute holds."""
    target = getattr(importlib.import_module(f"gsv_cli.commands.{entry.module}"), entry.attribute)
    assert entry.group == isinstance(target, typer.Typer)


def test_a_name_without_recorded_help_is_left_to_the_full_app() -> None:
    """A new command without short_help is answered by the app, not printed bare."""
    env = {"COMP_WORDS": "gsv w", "COMP_CWORD": "1"}
    offered = [Candidate("web", None), Candidate("workspace", "Files.")]
    assert answer("complete_bash", env, offered) is None
    assert answer("complete_bash", env, offered[1:]) == ("workspace", 0)
    assert answer("complete_bash", {**env, "COMP_WORDS": "gsv x"}, offered) == ("", 0)


@pytest.mark.parametrize("text", ["Run [bold]it[/bold].", "Ship it :rocket: today."])
def test_help_rich_would_render_is_left_to_the_full_app(text: str) -> None:
    """Typer renders zsh and fish help through rich: markup or an emoji code goes to it."""
    env = {"_TYPER_COMPLETE_ARGS": "gsv r"}
    assert answer("complete_zsh", env, [Candidate("run", text)]) is None
    assert answer("complete_zsh", env, [Candidate("run", "Run it.")]) is not None


@pytest.mark.parametrize(
    "instruction", ["complete_powershell", "source_bash", "complete_tcsh", "bash_complete"]
)
def test_other_instructions_are_left_to_the_full_app(instruction: str) -> None:
    """Only completing in bash, zsh or fish is answered from the table."""
    env = {"COMP_WORDS": "gsv c", "COMP_CWORD": "1", "_TYPER_COMPLETE_ARGS": "gsv c"}
    assert answer(instruction, env, [Candidate("chat", "Chat.")]) is None


@pytest.mark.parametrize(
    ("shell", "env", "read"),
    [
        ("bash", {"COMP_WORDS": "gsv\ncr", "COMP_CWORD": "1"}, ([], "cr")),  # IFS is a newline
        ("bash", {"COMP_WORDS": "gsv ", "COMP_CWORD": "1"}, ([], "")),
        ("bash", {"COMP_WORDS": "gsv cron a", "COMP_CWORD": "2"}, (["cron"], "a")),
        ("bash", {"COMP_WORDS": "gsv cr", "COMP_CWORD": "x"}, None),
        ("bash", {"COMP_WORDS": "gsv cr"}, None),
        ("bash", {"COMP_WORDS": "gsv 'cr", "COMP_CWORD": "1"}, None),  # quoting: click's split
        ("zsh", {"_TYPER_COMPLETE_ARGS": "gsv cr"}, ([], "cr")),
        ("zsh", {"_TYPER_COMPLETE_ARGS": "gsv cron "}, (["cron"], "")),
        ("fish", {"_TYPER_COMPLETE_ARGS": "gsv c\\r"}, None),
        ("fish", {"_TYPER_COMPLETE_ARGS": "gsv\u00a0cr"}, None),  # a space shlex keeps
    ],
)
def test_the_request_is_read_as_typer_reads_it(
    shell: str, env: dict[str, str], read: tuple[list[str], str] | None
) -> None:
    """Words before the completed one, and its start; None where click's split may differ."""
    assert completion_args(shell, env) == read
