"""`gsv heartbeat status|start|trigger [AGENT]`: the agents' periodic check-ins.

`status` and `start` show a table per agent (next and last beat, how the last one ended,
what was last delivered); `trigger` runs a beat now, waits for it and prints the
gateway's message and the reply. `--json` prints the gateway's answer as is. A failed
trigger prints its message on stderr and exits 1.
"""

from __future__ import annotations

from typing import Annotated
from typing import Any

import typer

from gsv_cli import output
from gsv_cli.apps import plain_app
from gsv_cli.options import JsonOpt
from gsv_cli.options import agent_params
from gsv_cli.reads import show

app = plain_app(
    help="Heartbeats: periodic check-ins where the agent reads HEARTBEAT.md.",
    no_args_is_help=True,
)

# a beat is a whole agent turn; the gateway stops one after ten minutes
TRIGGER_TIMEOUT = 660.0

AgentArg = Annotated[
    str | None, typer.Argument(metavar="[AGENT]", help="Agent id (default: every agent).")
]


@app.command("status")
def status(ctx: typer.Context, agent: AgentArg = None, json_output: JsonOpt = False) -> None:
    """Each agent's heartbeat: interval, next and last beat, last result."""
    from gsv_core.protocol.methods import HEARTBEAT_STATUS

    show(ctx.obj, HEARTBEAT_STATUS, agent_params(agent), json_output, print_agents)


@app.command("start")
def start(ctx: typer.Context, agent: AgentArg = None, json_output: JsonOpt = False) -> None:
    """(Re)start the scheduler: the next beats are one interval from now."""
    from gsv_core.protocol.methods import HEARTBEAT_START

    show(ctx.obj, HEARTBEAT_START, agent_params(agent), json_output, _print_started)


def _print_started(result: dict[str, Any]) -> None:
    output.write_text(f"{result['message']}\n")
    print_agents(result)


@app.command("trigger")
def trigger(
    ctx: typer.Context,
    agent: Annotated[
        str | None, typer.Argument(metavar="[AGENT]", help="Agent id (default: main).")
    ] = None,
    json_output: JsonOpt = False,
) -> None:
    """Run a heartbeat now (without the schedule's checks) and show its outcome."""
    from gsv_core.protocol.methods import HEARTBEAT_TRIGGER

    params = agent_params(agent)
    timeout = TRIGGER_TIMEOUT
    result = show(ctx.obj, HEARTBEAT_TRIGGER, params, json_output, _print_beat, timeout=timeout)
    if not result.get("ok"):
        raise typer.Exit(1)


def _print_beat(result: dict[str, Any]) -> None:
    if result.get("ok"):
        output.write_text(f"{result['message']}\n{trigger_details(result)}")
    else:
        output.print_error(str(result.get("message")))


def trigger_details(result: dict[str, Any]) -> str:
    if result.get("skipped"):
        return ""
    if result.get("delivered"):
        outcome = f"delivered to {result.get('deliveredTo', '-')}"
    else:
        outcome = f"not delivered ({result.get('heldBack', '-')})"
    return f"{outcome}\nreply: {result.get('reply', '')}\n"


def print_agents(result: dict[str, Any]) -> None:
    """The `agents` of a heartbeat.status or heartbeat.start result, one row each."""
    columns = ["agent", "every", "next beat", "last beat", "last result", "last delivered"]
    rows = [agent_row(agent_id, state) for agent_id, state in result["agents"].items()]
    output.print_table(columns, rows, empty="no agents")


def agent_row(agent_id: str, state: dict[str, Any]) -> list[str]:
    every = state.get("every") or "-"
    if state.get("error"):
        every = f"{every} (config error: {state['error']})"
    sent = state.get("lastHeartbeatSentAt")
    delivered = f"{output.when(sent)} {state.get('lastHeartbeatText') or ''}" if sent else "-"
    return [agent_id, every, output.when(state.get("nextHeartbeatAt")),
            output.when(state.get("lastHeartbeatAt")), describe_result(state.get("lastResult")),
            delivered.strip()]  # fmt: skip


def describe_result(result: dict[str, Any] | None) -> str:
    """How the last beat ended, in a few words."""
    if not result:
        return "-"
    when = f"{output.when(result.get('at'))} ({result.get('trigger')})"
    if result["status"] == "skipped":
        return f"{when} skipped: {result.get('skipReason')}"
    if result["status"] == "error":
        return f"{when} error: {result.get('error')}"
    if result.get("delivered"):
        return f"{when} delivered to {result.get('deliveredTo')}"
    return f"{when} not delivered: {result.get('heldBack')}"
