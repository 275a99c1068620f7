"""The `gsv` typer app: global options and the command groups.

A run builds only what it needs: `gsv sessions list` imports and builds the sessions
group alone (typer turns every registered command into a click command on each run, so
registering all of them made every group's `--help` pay for all groups), under a plain
root when the line gives no root option that takes a value (build_app). The commands and
groups are listed in gsv_cli.entries. `gsv --help`, completion of the first word when that
table cannot answer it (gsv_cli.first_word) and anything not recognised get the whole
app, as do tests that import `app`. Command modules stay light all the same: heavy
imports live inside command bodies (tests/test_import_hygiene.py holds this).
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
from collections.abc import Mapping
from typing import Annotated

import typer

from gsv_cli.apps import plain_app
from gsv_cli.entries import ENTRIES
from gsv_cli.entries import Entry
from gsv_cli.global_options import after_command
from gsv_cli.global_options import declared_in
from gsv_cli.global_options import hoist
from gsv_cli.state import CliState

# global options that take a value: the word after them is not a command
VALUE_OPTIONS = ("--url", "-u", "--token", "-t")
# global flags a plain root takes (build_app)
PLAIN_FLAGS = ("--json", "--version", "-V")


def _print_version(value: bool) -> None:
    if value:
        from gsv_core import __version__

        typer.echo(f"gsv {__version__}")
        raise typer.Exit()


JsonFlag = Annotated[bool, typer.Option("--json", help="Print data as JSON (for scripts).")]
VersionFlag = Annotated[
    bool,
    typer.Option(
        "--version", "-V", is_eager=True, callback=_print_version, help="Show the version."
    ),
]


def main_options(
    ctx: typer.Context,
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            "-u",
            help="Gateway WebSocket URL (env GSV_URL, then local config gateway.url).",
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option("--token", "-t", help="Gateway token (env GSV_TOKEN, then the secret store)."),
    ] = None,
    json_output: JsonFlag = False,
    version: VersionFlag = False,
) -> None:
    ctx.obj = CliState(url_flag=url, token_flag=token, json=json_output)


def plain_options(
    ctx: typer.Context, json_output: JsonFlag = False, version: VersionFlag = False
) -> None:
    """main_options for a command line that gives only PLAIN_FLAGS before the command."""
    ctx.obj = CliState(url_flag=None, token_flag=None, json=json_output)


@functools.cache
def build_app(only: str | None = None, plain: bool = False) -> typer.Typer:
    """The gsv app with every command, or with only the one named `only`.

    A plain app's root takes PLAIN_FLAGS alone. Typer 0.29 passes every other option of
    the root through pydantic on every run, given or not (--url, --token, its own --help,
    --install-completion and --show-completion: importing pydantic is about half of
    `gsv <group> --help`); a plain root leaves out those the command line does not give.
    """
    app = plain_app(
        name="gsv",
        help="gsv: a personal AI agent that lives on your own machines.",
        no_args_is_help=True,
        context_settings={"help_option_names": ["-h", "--help"]},
        pretty_exceptions_enable=False,
        add_help_option=not plain,
        add_completion=not plain,
    )
    app.callback()(plain_options if plain else main_options)
    for entry in ENTRIES:
        if only is None or entry.name == only:
            _register(app, entry)
    return app


def _register(app: typer.Typer, entry: Entry) -> None:
    target = getattr(importlib.import_module(f"gsv_cli.commands.{entry.module}"), entry.attribute)
    if isinstance(target, typer.Typer):
        app.add_typer(target, name=entry.name, hidden=entry.hidden)
    else:
        app.command(entry.name, hidden=entry.hidden)(target)


def invoked(args: list[str]) -> str | None:
    """The command the arguments run, when this run needs no other: None (everything)
    for `gsv --help`, a name that is not known, and shell completion of the first word;
    completing inside a group builds that group alone (as fast as its `--help`)."""
    from gsv_cli.commands.completions import COMPLETE_VAR

    if os.environ.get(COMPLETE_VAR):
        return named(completed_words(os.environ))
    return named(args)


def completed_words(env: Mapping[str, str]) -> list[str]:
    """The words before the one being completed, as typer's completion scripts pass them:
    zsh, fish and PowerShell the line in _TYPER_COMPLETE_ARGS (ending in a space when a
    new word is started), bash COMP_WORDS with the index COMP_CWORD of the current word."""
    line = env.get("_TYPER_COMPLETE_ARGS")
    if line is not None:
        words = line.split()[1:]
        return words if line.endswith(" ") else words[:-1]
    words = env.get("COMP_WORDS", "").split()
    try:
        current = int(env.get("COMP_CWORD", ""))
    except ValueError:
        return []
    return words[1:current]


def named(args: list[str]) -> str | None:
    """The entry the arguments name first (global options and their values passed over)."""
    words = iter(args)
    for word in words:
        if word in VALUE_OPTIONS:
            next(words, None)
        elif not word.startswith("-"):
            return word if any(entry.name == word for entry in ENTRIES) else None
    return None


def plain_root(args: list[str]) -> bool:
    """Whether the words before the command are all PLAIN_FLAGS (then a plain root serves)."""
    for word in args:
        if not word.startswith("-"):
            return True
        if word not in PLAIN_FLAGS:
            return False
    return True


def __getattr__(name: str) -> typer.Typer:
    if name == "app":  # the whole CLI, for tests and tools that import it
        return build_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    from gsv_cli.commands.completions import COMPLETE_VAR

    instruction = os.environ.get(COMPLETE_VAR)
    if instruction:
        _complete_first_word(instruction)
    args = sys.argv[1:]
    only = invoked(args)
    if not instruction and after_command(args):  # `gsv config get model --json`
        args = hoist(args, declared_in(build_app(only)))
    # completion needs the root's completion options: adding them registers typer's formats
    plain = only is not None and not instruction and plain_root(args)
    # a fixed prog name keeps `python -m gsv_cli` and the completion variable (_GSV_COMPLETE)
    # identical to the installed `gsv` script
    build_app(only, plain)(args=args, prog_name="gsv")


def _complete_first_word(instruction: str) -> None:
    """Answer the completion of the first word from ENTRIES and exit, if it is that (the
    app would build every group to list their names); otherwise return."""
    from gsv_cli import first_word

    done = first_word.answer(instruction, os.environ, first_word.candidates(ENTRIES))
    if done is None:
        return
    if done.output is not None:
        sys.stdout.write(done.output + "\n")
        sys.stdout.flush()
    sys.exit(done.status)


if __name__ == "__main__":
    main()
