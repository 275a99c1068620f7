"""`gsv tools list|call`: the tools the agent can call, and calling one by hand."""

from __future__ import annotations

import json
from typing import Annotated
from typing import Any

import typer

from gsv_cli import output
from gsv_cli.apps import plain_app
from gsv_cli.options import JsonOpt
from gsv_cli.reads import show_listing
from gsv_cli.state import CliState

app = plain_app(help="List the agent's tools, or call one by hand.", no_args_is_help=True)


@app.command("list")
def list_tools(ctx: typer.Context, json_output: JsonOpt = False) -> None:
    """Show every tool: native gsv__ tools, `{node}__{Tool}` node tools and
    `mcp_{server}__{tool}` MCP tools."""
    from gsv_core.protocol.methods import TOOLS_LIST

    show_listing(ctx.obj, TOOLS_LIST, None, "tools", json_output, _print_tools)


def _print_tools(tools: list[dict[str, Any]]) -> None:
    output.print_table(["tool", "node", "description"], [_row(tool) for tool in tools])


def _row(tool: dict[str, Any]) -> list[str]:
    name = str(tool.get("name", ""))
    node, sep, bare = name.partition("__")
    summary = str(tool.get("description", "")).strip().splitlines()
    if sep and node.startswith("mcp_"):  # an MCP server's tool (docs/mcp.md)
        node = f"mcp server {node.removeprefix('mcp_')}"
    return [
        bare if sep else name,
        node if sep and node != "gsv" else "gateway",
        summary[0] if summary else "",
    ]


@app.command("call")
def call_tool(
    ctx: typer.Context,
    tool: Annotated[str, typer.Argument(help="Namespaced tool name, e.g. laptop__Read.")],
    args: Annotated[str, typer.Argument(help="Arguments as a JSON object.")] = "{}",
    timeout: Annotated[float, typer.Option("--timeout", min=1, help="Seconds to wait.")] = 300,
) -> None:
    """Call TOOL with ARGS (JSON) and print its result; exit 1 if the tool fails."""
    from gsv_cli.runner import call
    from gsv_core.protocol.methods import TOOL_INVOKE

    try:
        parsed = json.loads(args)
    except ValueError as exc:
        raise typer.BadParameter(f"not valid JSON: {exc}", param_hint="ARGS") from None
    if not isinstance(parsed, dict):
        raise typer.BadParameter(
            'must be a JSON object, e.g. \'{"path": "a.txt"}\'', param_hint="ARGS"
        )
    state: CliState = ctx.obj
    payload = call(state, TOOL_INVOKE, {"tool": tool, "args": parsed}, timeout=timeout)
    output.print_json(payload.get("result"))
