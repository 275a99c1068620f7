"""Where CLI output goes: data to stdout (as rich tables or `--json`), errors to stderr."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import typer

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
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def print_json_line(data: Any) -> None:
    """One compact JSON document per line (streams of events for scripts)."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def print_data(data: Any, as_json: bool) -> None:
    """Show a value: JSON when asked (or when it is structured), plain text otherwise."""
    if as_json or isinstance(data, dict | list):
        print_json(data)
    else:
        sys.stdout.write(f"{data}\n")


def print_table(columns: list[str], rows: list[list[str]], empty: str = "(none)") -> None:
    """A rich table on stdout (plain text when stdout is not a terminal)."""
    if not rows:
        write_text(empty + "\n")
        return
    from rich.table import Table

    table = Table(box=None, show_edge=False, pad_edge=False, header_style="bold")
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*row)
    out().print(table)


def when(epoch_ms: int | None) -> str:
    """An epoch-ms timestamp as local `YYYY-MM-DD HH:MM:SS`, or "-"."""
    if not epoch_ms:
        return "-"
    import datetime

    moment = datetime.datetime.fromtimestamp(epoch_ms / 1000).astimezone()
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def print_error(message: str) -> None:
    # soft wrap: a long error stays one line (the terminal wraps it; copies stay whole)
    err().print(f"[red]error:[/red] {message}", markup=True, highlight=False, soft_wrap=True)


def print_hint(message: str) -> None:
    err().print(message, markup=False, highlight=False)


def write_text(text: str) -> None:
    """Raw text on stdout, exactly as given (scripts, file contents)."""
    sys.stdout.write(text)
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
