"""`gsv cron` (being written)."""

from __future__ import annotations

import typer

app = typer.Typer(help="(being written)", no_args_is_help=True)
