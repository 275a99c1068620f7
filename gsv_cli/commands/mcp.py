"""`gsv mcp add|list|test|remove`: MCP servers whose tools the agent is offered as
`mcp_<server>__<tool>` (docs/mcp.md). Everything a server says (tool names, descriptions,
errors) is printed as text through gsv_cli.output. `add` and `test` show which tools run
unasked: those the server marks read-only, unless the owner's rules say otherwise."""

from __future__ import annotations

import os
from typing import Annotated
from typing import Any

import typer

from gsv_cli import output
from gsv_cli.apps import plain_app
from gsv_cli.options import JsonOpt
from gsv_cli.state import CliState

app = plain_app(help="MCP servers whose tools the agent can use.", no_args_is_help=True)
# the approval policy's decisions, as `test` shows them and as `add` lists them
VERDICTS = {"allow": "unasked", "ask": "asks", "deny": "refused"}
GROUPS = {"allow": "Run unasked", "ask": "Ask first", "deny": "Refused"}


def _pairs(values: list[str], option: str, kind: str) -> dict[str, str]:
    """`K=V` options as a dict; a bare `K` takes its value from this shell's environment
    (so a credential need not be typed on the command line, where shell history and `ps`
    keep it); BadParameter for a bare `K` that is not set."""
    from gsv_core.config.mcp import looks_mcp_secret

    pairs: dict[str, str] = {}
    for value in values:
        key, sep, item = value.partition("=")
        key = key.strip()
        if not key:
            raise typer.BadParameter(f"{value!r} is not KEY=VALUE or KEY", param_hint=option)
        if not sep:
            if key not in os.environ:
                raise typer.BadParameter(f"{value!r} is not KEY=VALUE, and {key} is not set "
                                         "in this shell", param_hint=option)  # fmt: skip
            item = os.environ[key]
        elif looks_mcp_secret(key, kind):
            output.print_hint(f"{key} was given on the command line (shell history and ps "
                              f"keep it): next time export it and pass {option} {key}")  # fmt: skip
        pairs[key] = item
    return pairs


@app.command("add")
def add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The server's name (part of its tools' names).")],
    command: Annotated[
        list[str] | None, typer.Argument(help="After --: the command and its arguments.")
    ] = None,
    url: Annotated[str | None, typer.Option("--url", help="A streamable HTTP server.")] = None,
    header: Annotated[
        list[str] | None,
        typer.Option("--header", help="K=V, an HTTP header; K alone: from $K (repeatable)."),
    ] = None,
    env: Annotated[
        list[str] | None,
        typer.Option("--env", help="K=V, an environment variable; K alone: from $K (repeatable)."),
    ] = None,
    cwd: Annotated[str | None, typer.Option("--cwd", help="The command's directory.")] = None,
    timeout_ms: Annotated[
        int | None, typer.Option("--timeout-ms", help="A tool call's deadline.")
    ] = None,
    start_timeout_ms: Annotated[
        int | None,
        typer.Option("--start-timeout-ms", help="The deadline to start and list its tools."),
    ] = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="Replace a server of that name.")
    ] = False,
    json_output: JsonOpt = False,
) -> None:
    """Add a server: `gsv mcp add NAME -- COMMAND ARGS...` or `gsv mcp add NAME --url URL`."""
    from gsv_cli.runner import call
    from gsv_core.protocol.methods import MCP_ADD

    params: dict[str, Any] = {"name": name, "replace": replace}
    if command:
        params.update(command=command[0], args=command[1:])
    optional = {"url": url, "cwd": cwd, "timeoutMs": timeout_ms,
                "startTimeoutMs": start_timeout_ms,
                "headers": _pairs(header or [], "--header", "headers") or None,
                "env": _pairs(env or [], "--env", "env") or None}  # fmt: skip
    params.update({key: value for key, value in optional.items() if value is not None})
    state: CliState = ctx.obj
    added: dict[str, Any] = call(state, MCP_ADD, params, timeout=600)
    if state.wants_json(json_output):
        output.print_json(added)
    elif added["state"] == "ready":
        output.write_text(f"Added MCP server {name}: {added['toolCount']} tool(s).\n")
        _print_approvals(added.get("tools") or [])
    else:
        output.write_text(f"Added MCP server {name}, but it is {added['state']}.\n")
        if added.get("lastError"):
            output.print_error(str(added["lastError"]))
        output.print_hint(f"See `gsv mcp test {name}` and the gateway log.")


@app.command("list")
def list_servers(
    ctx: typer.Context,
    json_output: JsonOpt = False,
) -> None:
    """Show each server: transport, state, tool count, last error."""
    from gsv_cli.runner import call
    from gsv_core.protocol.methods import MCP_LIST

    state: CliState = ctx.obj
    servers: list[dict[str, Any]] = call(state, MCP_LIST)["servers"]
    if state.wants_json(json_output):
        output.print_listing("servers", servers)
        return
    rows = [[str(s["name"]), str(s["transport"]), str(s["state"]), str(s["toolCount"]),
             str(s.get("lastError") or "")] for s in servers]  # fmt: skip
    output.print_table(["name", "transport", "state", "tools", "last error"], rows,
                       empty="No MCP servers. Add one: gsv mcp add NAME -- COMMAND")  # fmt: skip


@app.command("test")
def test_server(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The server's name.")],
    json_output: JsonOpt = False,
) -> None:
    """Connect to a server afresh and list its tools with the names the agent gets."""
    from gsv_cli.runner import call
    from gsv_core.protocol.methods import MCP_TEST

    state: CliState = ctx.obj
    tested: dict[str, Any] = call(state, MCP_TEST, {"name": name}, timeout=600)
    if state.wants_json(json_output):
        output.print_listing("tools", tested["tools"], server=tested["name"])
        return
    rows = [[str(t["name"]), str(t.get("offeredAs") or "(not offered)"),
             VERDICTS.get(t.get("approval") or "", ""),
             _first_line(t.get("description"))] for t in tested["tools"]]  # fmt: skip
    output.print_table(["tool", "offered as", "approval", "description"], rows,
                       empty="(no tools)")  # fmt: skip


@app.command("remove")
def remove(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The server's name.")],
) -> None:
    """Stop a server and remove it from the config."""
    from gsv_cli.runner import call
    from gsv_core.protocol.methods import MCP_REMOVE

    state: CliState = ctx.obj
    call(state, MCP_REMOVE, {"name": name})
    output.write_text(f"Removed MCP server {name}.\n")


def _print_approvals(tools: list[dict[str, Any]]) -> None:
    """One line per decision: the tools that run unasked, ask first, are refused."""
    for verdict, label in GROUPS.items():
        names = [str(t["name"]) for t in tools if t.get("approval") == verdict]
        if names:
            output.write_text(f"{label}: {', '.join(names)}\n")
    if any(t.get("approval") == "ask" for t in tools):
        output.print_hint("Tools the server does not mark read-only ask first; to allow one, "
                          "add a toolApproval.rules entry (docs/mcp.md#approvals).")  # fmt: skip


def _first_line(text: Any) -> str:
    lines = str(text or "").strip().splitlines()
    return lines[0] if lines else ""
