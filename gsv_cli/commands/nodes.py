"""`gsv nodes list|invite|revoke|forget` and `gsv logs`: the nodes the gateway knows, their
credentials and their logs."""

from __future__ import annotations

from typing import Annotated
from typing import Any

import typer

from gsv_cli import credentials
from gsv_cli import output
from gsv_cli.apps import plain_app
from gsv_cli.options import JsonOpt
from gsv_cli.state import CliState

app = plain_app(help="Nodes the gateway knows, online or not.", no_args_is_help=True)


@app.command("list")
def list_nodes(ctx: typer.Context, json_output: JsonOpt = False) -> None:
    """Show every known node: online or offline, platform, version, capabilities, last seen."""
    from gsv_cli.runner import call
    from gsv_core.protocol.methods import NODES_LIST

    state: CliState = ctx.obj
    nodes: list[dict[str, Any]] = call(state, NODES_LIST)["nodes"]
    issued = credentials.credentials(state, "node")
    if state.wants_json(json_output):
        for node in nodes:
            node["credentials"] = [c for c in issued if c["subject"] == node["nodeId"]]
        output.print_listing("nodes", nodes)
        return
    from gsv_core.protocol.sandbox_info import sandbox_words

    rows = [
        [
            node["nodeId"],
            "online" if node["online"] else "offline",
            node.get("platform") or "-",
            node.get("version") or "-",
            sandbox_words(node.get("sandbox")),
            ", ".join(node.get("hostCapabilities", [])) or "-",
            "now" if node["online"] else output.when(node.get("lastSeenAt")),
        ]
        for node in nodes
    ]
    columns = ["node", "state", "platform", "version", "sandbox", "capabilities", "last seen"]
    output.print_table(columns, rows, empty="no nodes yet: start one with `gsv node --foreground`")
    output.write_text("\n")
    credentials.print_credentials(issued, "node")


@app.command("invite")
def invite(
    ctx: typer.Context,
    node_id: Annotated[
        str | None, typer.Option("--id", help="Only this node id may join with the code.")
    ] = None,
    replace: Annotated[
        bool,
        typer.Option(
            "--replace",
            help="Without --id: the code may also take an id that already has a credential "
            "(ending it). Otherwise it cannot.",
        ),
    ] = False,
) -> None:
    """Print a one-time join code for a node on another machine (single use, 10 minutes)."""
    credentials.invite(ctx.obj, "node", node_id, replace)


credentials.add_revoke_command(
    app,
    "Node id or credential id.",
    "End a node's credential and disconnect it at once (it must join again).",
    role="node",
)


@app.command("forget")
def forget(
    ctx: typer.Context,
    node_id: Annotated[str, typer.Argument(metavar="ID", help="Node id.")],
    force: Annotated[bool, typer.Option("--force", help="Disconnect it if connected.")] = False,
) -> None:
    """Remove a node from the gateway's registry (--force if it is still connected)."""
    from gsv_cli.runner import gateway_client
    from gsv_cli.runner import run
    from gsv_core.errors import Conflict
    from gsv_core.protocol.methods import NODE_FORGET

    state: CliState = ctx.obj

    async def forget_once() -> Any:
        async with gateway_client(state) as client:
            try:
                return await client.call(NODE_FORGET, {"nodeId": node_id, "force": force})
            except Conflict:  # the gateway's text names its param (force=true): here, a flag
                raise Conflict(f"node {node_id} is still connected (use --force to disconnect "
                               "and forget it)") from None  # fmt: skip

    result = run(forget_once)
    if state.json:
        output.print_json(result)
        return
    said = "forgot" if result["removed"] else "nothing known about"
    extra = " (disconnected it)" if result["disconnected"] else ""
    output.write_text(f"{said} node {result['nodeId']}{extra}\n")


def logs(
    ctx: typer.Context,
    node: Annotated[str | None, typer.Option("--node", help="Node id (needed if several).")] = None,
    lines: Annotated[int, typer.Option("--lines", "-n", min=1, max=5000, help="Lines.")] = 100,
) -> None:
    """Show the last lines of a node's log, fetched through the gateway."""
    from gsv_cli.runner import call
    from gsv_core.protocol.methods import LOGS_GET

    state: CliState = ctx.obj
    params: dict[str, Any] = {"lines": lines}
    if node:
        params["nodeId"] = node
    result = call(state, LOGS_GET, params, timeout=120)
    if state.json:
        output.print_json(result)
        return
    output.write_text("".join(f"{line}\n" for line in result["lines"]))
