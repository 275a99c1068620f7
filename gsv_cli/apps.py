"""The Typer apps of the CLI, made one way: help is click's plain text. Typer's rich help
renderer (boxes and colours) costs about 100 ms per `--help`, as much as the rest of the
command line put together (bench/cli_startup.py), for the same words."""

from __future__ import annotations

from typing import Any

import typer


def plain_app(**options: Any) -> typer.Typer:
    """`typer.Typer(**options)` with plain help and plain usage errors."""
    return typer.Typer(rich_markup_mode=None, **options)
