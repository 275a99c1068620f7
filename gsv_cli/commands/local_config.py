"""Placeholder being written (see helper task)."""

import typer

app = typer.Typer(no_args_is_help=True)
