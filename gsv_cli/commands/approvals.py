"""`gsv approvals list|approve ID|deny ID`: tool calls waiting for you."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from gsv_cli import output
from gsv_cli.state import CliState

app = typer.Typer(help="Tool calls waiting for your approval.", no_args_is_help=True)

ApprovalId = Annotated[str, typer.Argument(metavar="ID", help="Approval id (the short code).")]


def _call(ctx: typer.Context, method: str, params: dict[str, Any] | None = None) -> Any:
    from gsv_cli.runner import call

    return call(ctx.obj, method, params)


@app.command("list")
def list_approvals(
    ctx: typer.Context,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Pending approvals: the exact call, why it waits, when it expires."""
    from gsv_core.protocol.methods import TOOL_APPROVALS

    state: CliState = ctx.obj
    pending = _call(ctx, TOOL_APPROVALS)["approvals"]
    if json_output or state.json:
        output.print_json(pending)
        return
    rows = [
        [a["approvalId"], a["tool"], a["summary"], a["reason"], a["sessionKey"],
         output.when(a["expiresAt"])]
        for a in pending
    ]  # fmt: skip
    output.print_table(["id", "tool", "call", "why", "session", "expires"], rows,
                       empty="nothing waits for approval")  # fmt: skip


def _answer(ctx: typer.Context, approval_id: str, decision: str, remember: bool) -> None:
    from gsv_core.protocol.methods import TOOL_APPROVE

    params: dict[str, Any] = {"approvalId": approval_id, "decision": decision}
    if remember:
        params["remember"] = "session"
    result = _call(ctx, TOOL_APPROVE, params)
    state: CliState = ctx.obj
    if state.json:
        output.print_json(result)
        return
    verb = "approved" if decision == "allow" else "denied"
    output.write_text(f"{verb} {result['tool']} ({result['approvalId']})\n")


@app.command("approve")
def approve(
    ctx: typer.Context,
    approval_id: ApprovalId,
    remember: Annotated[
        bool, typer.Option("--remember", help="Also allow this exact call again in the session.")
    ] = False,
) -> None:
    """Let the call run."""
    _answer(ctx, approval_id, "allow", remember)


@app.command("deny")
def deny(ctx: typer.Context, approval_id: ApprovalId) -> None:
    """Refuse the call (the agent is told it was denied)."""
    _answer(ctx, approval_id, "deny", False)
