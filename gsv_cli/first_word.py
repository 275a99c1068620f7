"""Shell completion of the first word (`gsv cr<TAB>`), answered without building the app.

Any command name may follow `gsv`, so typer answers this by building every command group
(about 4x `import typer`, bench/cli_startup.py). The names are known without that: the
ENTRIES table of gsv_cli.entries lists them with the help shown beside each (it lives
there, not in gsv_cli.main, so this module never imports main). `answer()` reads the
request as typer's completion classes read it and prints the names as they print them
(typer/_completion_classes.py: BashComplete, ZshComplete and FishComplete, their
get_completion_args, format_completion and complete). It answers a
command name in first place only: an option, a later word, quoting, another shell or a
name without recorded help get None, and the full app answers.
tests/cli/test_first_word_completion.py runs both ways and holds their output equal.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import NamedTuple

if TYPE_CHECKING:
    from gsv_cli.entries import Entry

# a line click's shlex split splits as str.split() does: no quoting, only its whitespace
_PLAIN_WORDS = re.compile(r"(?:[^\s\"'\\]|[ \t\r\n])*")
_WHITESPACE = re.compile(r"\s")
# help typer's rich rendering (zsh, fish) would change: markup and emoji codes
_RICH_SYNTAX = re.compile(r"\[|:\S+:")


class Candidate(NamedTuple):
    """A name completion may offer and the help shown beside it (None: not recorded)."""

    name: str
    help: str | None


class Answer(NamedTuple):
    """What the completion run prints (None: nothing at all) and its exit status."""

    output: str | None
    status: int = 0


def candidates(entries: Iterable[Entry]) -> list[Candidate]:
    """The visible names in click's order: typer adds an app's commands before its groups."""
    visible = [entry for entry in entries if not entry.hidden]
    ordered = [e for e in visible if not e.group] + [e for e in visible if e.group]
    return [Candidate(entry.name, entry.short_help) for entry in ordered]


def completion_args(shell: str, env: Mapping[str, str]) -> tuple[list[str], str] | None:
    """The words before the one completed and the start of that one, as typer reads them;
    None where this whitespace split could differ from click's shlex split."""
    line = env.get("COMP_WORDS" if shell == "bash" else "_TYPER_COMPLETE_ARGS", "")
    if not _PLAIN_WORDS.fullmatch(line):
        return None
    words = line.split()
    if shell != "bash":
        args = words[1:]
        if args and not line.endswith(" "):  # the last word is still being typed
            return args[:-1], args[-1]
        return args, ""
    try:
        current = int(env["COMP_CWORD"])
    except (KeyError, ValueError):
        return None  # typer fails on these: let it say so
    try:
        return words[1:current], words[current]
    except IndexError:
        return words[1:current], ""


def answer(instruction: str, env: Mapping[str, str], offered: Sequence[Candidate]) -> Answer | None:
    """The completion of the first word, or None when the full app must answer."""
    action, _, shell = instruction.partition("_")  # as typer splits `complete_bash`
    if action != "complete" or shell not in _FORMATS:
        return None
    read = completion_args(shell, env)
    if read is None:
        return None
    args, incomplete = read
    # click offers options too when the word starts with neither a letter nor a digit
    if args or (incomplete and not incomplete[0].isalnum()):
        return None
    found = [c for c in offered if c.name.startswith(incomplete)]
    if any(c.help is None or _RICH_SYNTAX.search(c.help) for c in found):
        return None
    return _FORMATS[shell](found, env)


def _bash(found: Sequence[Candidate], env: Mapping[str, str]) -> Answer:
    return Answer("\n".join(c.name for c in found))


def _zsh(found: Sequence[Candidate], env: Mapping[str, str]) -> Answer:
    if not found:
        return Answer("_files")
    items = "\n".join(
        f'"{_zsh_escape(c.name)}":"{_zsh_escape(c.help)}"' if c.help else f'"{_zsh_escape(c.name)}"'
        for c in found
    )
    return Answer(f"_arguments '*: :(({items}))'")


def _zsh_escape(text: str) -> str:
    return (
        text.replace('"', '""')
        .replace("'", "''")
        .replace("$", "\\$")
        .replace("`", "\\`")
        .replace(":", r"\\:")
    )


def _fish(found: Sequence[Candidate], env: Mapping[str, str]) -> Answer:
    action = env.get("_TYPER_COMPLETE_FISH_ACTION", "")
    if action == "is-args":  # the exit status alone says whether names are offered
        return Answer(None, 0 if found else 1)
    if action != "get-args":
        return Answer("")
    return Answer(
        "\n".join(f"{c.name}\t{_WHITESPACE.sub(' ', c.help)}" if c.help else c.name for c in found)
    )


_FORMATS: dict[str, Callable[[Sequence[Candidate], Mapping[str, str]], Answer]] = {
    "bash": _bash,
    "zsh": _zsh,
    "fish": _fish,
}
