"""Where CLI output goes: data to stdout (as rich tables or `--json`), errors to stderr.

Everything printed here may hold text from elsewhere (a stranger's pairing request, a
cron reply, a file name), so it goes through `gsv_cli.safe_text`: never parsed as rich
markup, control characters shown rather than obeyed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING
from typing import Any
from typing import NoReturn

import typer

from gsv_cli.safe_text import escape_json
from gsv_cli.safe_text import neutralise
from gsv_cli.safe_text import plain_text

if TYPE_CHECKING:
    from rich.console import Console

_consoles: dict[str, Console] = {}


def _console(name: str) -> Console:
    if name not in _consoles:
        from rich.console import Console  # rich is imported only when something prints

        _consoles[name] = Console(stderr=(name == "err"), highlight=False, soft_wrap=True)
    return _consoles[name]


def out() -> Console:
    return _console("out")


def err() -> Console:
    return _console("err")


def print_json(data: Any) -> None:
    """Machine-readable output: plain JSON on stdout, nothing else."""
    sys.stdout.write(escape_json(json.dumps(data, indent=2, ensure_ascii=False)) + "\n")
    sys.stdout.flush()


def print_listing(name: str, items: list[Any], **extra: Any) -> None:
    """Every listing's one `--json` shape: `{"<name>": [...], "count": n}` (scripts read
    `count` and the list by the plural name of what is listed)."""
    print_json({name: items, "count": len(items), **extra})


def print_json_line(data: Any) -> None:
    """One compact JSON document per line (streams of events for scripts)."""
    dumped = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    sys.stdout.write(escape_json(dumped) + "\n")
    sys.stdout.flush()


def print_data(data: Any, as_json: bool) -> None:
    """Show a value: JSON when asked (or when it is structured), plain text otherwise."""
    if as_json or isinstance(data, dict | list):
        print_json(data)
    else:
        write_text(f"{data}\n")


def print_table(
    columns: list[str],
    rows: list[list[str]],
    empty: str = "(none)",
    whole: tuple[str, ...] = (),
) -> None:
    """A rich table on stdout (plain text when stdout is not a terminal); every cell is
    shown literally (a plain str cell would be parsed as markup). The `whole` columns
    (ids a person copies) are never folded; the others give way."""
    if not rows:
        write_text(empty + "\n")
        return
    from rich.table import Table

    table = Table(box=None, show_edge=False, pad_edge=False, header_style="bold")
    for column in columns:
        table.add_column(column, overflow="fold", no_wrap=column in whole)
    for row in rows:
        table.add_row(*(plain_text(cell) for cell in row))
    out().print(table)


def count(n: int, what: str) -> str:
    """`1 model`, `3 models`: a number and its noun, in the right number."""
    return f"{n} {what}{'' if n == 1 else 's'}"


def when(epoch_ms: int | None) -> str:
    """An epoch-ms timestamp as local `YYYY-MM-DD HH:MM:SS`, or "-"."""
    if not epoch_ms:
        return "-"
    import datetime

    moment = datetime.datetime.fromtimestamp(epoch_ms / 1000).astimezone()
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def print_error(message: str) -> None:
    from rich.text import Text

    line = Text.assemble(("error:", "red"), " ", plain_text(message))
    # soft wrap: a long error stays one line (the terminal wraps it; copies stay whole)
    err().print(line, highlight=False, soft_wrap=True)


def print_hint(message: str) -> None:
    err().print(plain_text(message), highlight=False)


def write_text(text: str) -> None:
    """Text for a person on stdout, not parsed as markup; control characters are shown,
    never obeyed."""
    sys.stdout.write(neutralise(text))
    sys.stdout.flush()


def write_content(text: str) -> None:
    """A file's text on stdout: exact when redirected or piped (scripts, `> copy.md`), and
    neutralised on a terminal, where its escape sequences would be obeyed (GNU ls shows
    control characters in names the same way). Lone surrogates cannot be encoded either
    way, so they are always written as escapes."""
    if sys.stdout.isatty():
        write_text(text)
        return
    sys.stdout.write(text.encode("utf-8", "backslashreplace").decode("utf-8"))
    sys.stdout.flush()


@contextmanager
def reporting_errors() -> Iterator[None]:
    """For synchronous commands: GsvError -> red message on stderr, exit 1 (as runner.run)."""
    from gsv_core.errors import GsvError

    try:
        yield
    except GsvError as exc:
        print_error(exc.message)
        raise typer.Exit(1) from None


def fail(message: str, hint: str | None = None) -> NoReturn:
    """Print an error (and a hint) on stderr and exit 1."""
    print_error(message)
    if hint:
        print_hint(hint)
    raise typer.Exit(1)
