"""The global options (`--json`, `--url`/`-u`, `--token`/`-t`) anywhere on the line:
`gsv config get model --json` means `gsv --json config get model`.

Click reads an option only where it is declared, so a global option after the
subcommand used to be "No such option". Before the app runs, such options are moved in
front of the command, unless the command declares one of that name itself (`gsv mcp add
--url`, `gsv init --token`: the command's own wins). Nothing after `--` moves (it belongs
to a command the line passes on, as in `gsv mcp add NAME -- server --json`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# global option -> whether it takes a value
GLOBAL = {"--json": False, "--url": True, "-u": True, "--token": True, "-t": True}

# the option names the command that `path` (its words) names declares, or None when the
# path names no command
Declared = Callable[[list[str]], frozenset[str] | None]


def hoist(args: list[str], declared: Declared) -> list[str]:
    """`args` with the global options found after the command moved before it."""
    path, index = _command_path(args, declared)
    if index is None:
        return args
    own = declared(path) or frozenset()
    front, rest, moved = args[:index], [], []
    words = iter(range(index, len(args)))
    for i in words:
        word = args[i]
        if word == "--":
            rest.extend(args[i:])
            break
        name = word.split("=", 1)[0]
        if name in GLOBAL and name not in own:
            moved.append(word)
            if GLOBAL[name] and "=" not in word and i + 1 < len(args):
                moved.append(args[next(words)])
            continue
        rest.append(word)
    return [*front, *moved, *rest] if moved else args


def _command_path(args: list[str], declared: Declared) -> tuple[list[str], int | None]:
    """The words naming the command (`["config", "get"]`) and where it starts in `args`
    (after the root's options), or ([], None) when the line names none."""
    index = 0
    while index < len(args) and args[index].startswith("-"):
        takes = GLOBAL.get(args[index].split("=", 1)[0], False)
        index += 2 if takes and "=" not in args[index] else 1
    start = index
    path: list[str] = []
    while index < len(args) and not args[index].startswith("-"):
        if declared([*path, args[index]]) is None:
            break
        path.append(args[index])
        index += 1
    return (path, start) if path else ([], None)


def after_command(args: list[str]) -> bool:
    """Whether a global option follows the first command word (cheap: no app built), so
    `hoist` has something to do."""
    seen_word = False
    for word in args:
        if word == "--":
            return False
        if not word.startswith("-"):
            seen_word = True
        elif seen_word and word.split("=", 1)[0] in GLOBAL:
            return True
    return False


def declared_in(app: object) -> Declared:
    """`Declared` for a typer app, read through the command tree typer builds
    (`typer.main.get_command`) with the Command API it exposes: a group lists and gets its
    commands, a command has its params. (typer vendors its click: names are not shared
    with an installed `click`, so groups are told by what they can do.)"""
    import typer

    assert isinstance(app, typer.Typer)
    root = typer.main.get_command(app)

    def declared(path: list[str]) -> frozenset[str] | None:
        command: Any = root
        for name in path:
            if not hasattr(command, "get_command"):
                return None
            command = command.get_command(typer.Context(command), name)
            if command is None:
                return None
        return frozenset(o for p in command.params for o in (*p.opts, *p.secondary_opts))

    return declared
