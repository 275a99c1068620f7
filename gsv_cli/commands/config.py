"""`gsv config get|set`: the gateway's configuration, over the wire."""

from __future__ import annotations

import json
from typing import Annotated
from typing import Any

import typer

from gsv_cli import output
from gsv_cli.apps import plain_app
from gsv_cli.state import CliState

app = plain_app(help="Read and change the gateway configuration.", no_args_is_help=True)


def parse_value(raw: str) -> Any:
    """VALUE is JSON when it parses as JSON, else the plain string."""
    try:
        return json.loads(raw)
    except ValueError:
        return raw


@app.command("get")
def get(
    ctx: typer.Context,
    path: Annotated[str | None, typer.Argument(help="Dotted path, e.g. model.id.")] = None,
) -> None:
    """Show the config, or the value at PATH (secrets show as ***)."""
    from gsv_cli.runner import call
    from gsv_core.protocol.methods import CONFIG_GET

    state: CliState = ctx.obj
    payload = call(state, CONFIG_GET, {"path": path} if path else {})
    if path is None:
        output.print_json(payload.get("config"))
    elif "value" not in payload:
        output.print_error(f"no config value at {path}")
        raise typer.Exit(1)
    else:
        output.print_data(payload["value"], state.json)


@app.command("set")
def set_(
    ctx: typer.Context,
    path: Annotated[str, typer.Argument(help="Dotted path, e.g. timeouts.toolMs.")],
    value: Annotated[
        str, typer.Argument(help="JSON value, else a string; null restores the default.")
    ],
) -> None:
    """Set the value at PATH."""
    from gsv_cli.runner import call
    from gsv_core.protocol.methods import CONFIG_SET

    state: CliState = ctx.obj
    payload = call(state, CONFIG_SET, {"path": path, "value": parse_value(value)})
    if state.json:
        output.print_json(payload)
    else:
        output.write_text(f"set {path}\n")
