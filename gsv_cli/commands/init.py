"""`gsv init`: write this machine's local config and, optionally, store a gateway token."""

from __future__ import annotations

from typing import Annotated

import typer

from gsv_cli import output
from gsv_cli.output import reporting_errors
from gsv_cli.state import CliState


def init(
    ctx: typer.Context,
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite an existing config file.")
    ] = False,
    url: Annotated[
        str | None, typer.Option("--url", help="Gateway URL to write as gateway.url.")
    ] = None,
    generate_token: Annotated[
        bool,
        typer.Option("--generate-token", help="Generate a gateway token and store it."),
    ] = False,
    token: Annotated[str | None, typer.Option("--token", help="Store this gateway token.")] = None,
) -> None:
    """Write the local config (config.toml) and optionally store a gateway token."""
    from gsv_core.errors import Conflict
    from gsv_core.localconfig import generate_token as new_token
    from gsv_core.localconfig import set_secret
    from gsv_core.localconfig import write_initial_config

    if generate_token and token is not None:
        raise typer.BadParameter("use either --generate-token or --token, not both")
    if token is not None and not token.strip():
        raise typer.BadParameter("the token must not be empty", param_hint="--token")
    secret = new_token() if generate_token else token
    with reporting_errors():
        try:
            path = write_initial_config(url, overwrite=force)
        except Conflict as exc:
            raise Conflict(f"{exc.message}; use --force to overwrite it") from None
        stored = set_secret("gateway.token", secret) if secret is not None else None
    _report(ctx, str(path), stored)


def _report(ctx: typer.Context, path: str, stored: str | None) -> None:
    state = ctx.find_object(CliState)
    if state is not None and state.json:
        output.print_json({"config": path, "token": stored})
        return
    output.write_text(f"wrote {path}\n")
    if stored is not None:
        output.write_text(
            f"{stored}\n"
            "`gsv gateway run` adopts it as the gateway's auth.token on first start.\n"
            "Show it for other machines with `gsv local-config get gateway.token --reveal`.\n"
        )
