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


def print_data(data: Any, as_json: bool) -> None:
    """Show a value: JSON when asked (or when it is structured), plain text otherwise."""
    if as_json or isinstance(data, dict | list):
        print_json(data)
    else:
        sys.stdout.write(f"{data}\n")


def print_error(message: str) -> None:
    err().print(f"[red]error:[/red] {message}", markup=True, highlight=False)


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
