"""The `gsv` typer app: global options and the command groups.

Command modules are imported here, so they must stay light: heavy imports live inside
command bodies (tests/test_import_hygiene.py holds this).
"""

from __future__ import annotations

from typing import Annotated

import typer

from gsv_cli.commands import (
    approvals,
    channels,
    chat,
    completions,
    config,
    cron,
    doctor,
    gateway,
    heartbeat,
    init,
    local_config,
    mcp,
    models,
    node,
    nodes,
    onboard,
    security,
    sessions,
    skills,
    status,
    tools,
    transfer,
    up,
    usage,
    workspace,
)
from gsv_cli.state import CliState

app = typer.Typer(
    name="gsv",
    help="gsv: a personal AI agent that lives on your own machines.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        from gsv_core import __version__

        typer.echo(f"gsv {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    ctx: typer.Context,
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            "-u",
            help="Gateway WebSocket URL (env GSV_URL, then local config gateway.url).",
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option("--token", "-t", help="Gateway token (env GSV_TOKEN, then the secret store)."),
    ] = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print data as JSON (for scripts).")
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", is_eager=True, callback=_print_version, help="Show the version."
        ),
    ] = False,
) -> None:
    ctx.obj = CliState(url_flag=url, token_flag=token, json=json_output)


app.command("chat")(chat.chat)
app.command("up")(up.up)
app.command("down")(up.down)
app.command("status")(status.status)
app.command("doctor")(doctor.doctor)
app.command("onboard")(onboard.onboard)
app.command("usage")(usage.usage)
app.add_typer(gateway.app, name="gateway")
app.add_typer(node.app, name="node")
app.add_typer(nodes.app, name="nodes")
app.add_typer(tools.app, name="tools")
app.add_typer(mcp.app, name="mcp")
app.add_typer(sessions.app, name="sessions")
app.add_typer(sessions.app, name="session", hidden=True)
app.add_typer(workspace.app, name="workspace")
app.add_typer(skills.app, name="skills")
app.add_typer(cron.app, name="cron")
app.add_typer(heartbeat.app, name="heartbeat")
app.add_typer(channels.app, name="channels")
app.add_typer(channels.app, name="channel", hidden=True)
app.add_typer(channels.pairing_app, name="pairing")
app.add_typer(channels.pairing_app, name="pair", hidden=True)
app.add_typer(approvals.app, name="approvals")
app.add_typer(security.app, name="security")
app.add_typer(models.app, name="models")
app.command("transfer")(transfer.transfer)
app.command("logs")(nodes.logs)
app.add_typer(config.app, name="config")
app.add_typer(local_config.app, name="local-config")
app.add_typer(completions.app, name="completions")
app.command("init")(init.init)


def main() -> None:
    # a fixed prog name keeps `python -m gsv_cli` and the completion variable (_GSV_COMPLETE)
    # identical to the installed `gsv` script
    app(prog_name="gsv")


if __name__ == "__main__":
    main()
