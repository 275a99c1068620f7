"""`gsv approvals list|show ID|approve ID|deny ID`: tool calls waiting for you;
`gsv approvals rules|allow|remove`: the programs you always allow (`toolApproval.allow`,
docs/approvals.md)."""

from __future__ import annotations

from typing import Annotated
from typing import Any

import typer

from gsv_cli import output
from gsv_cli.apps import plain_app
from gsv_cli.options import JsonOpt
from gsv_cli.reads import show_listing
from gsv_cli.state import CliState

app = plain_app(
    help="Tool calls waiting for your approval; the programs you always allow.",
    no_args_is_help=True,
)

ApprovalId = Annotated[str, typer.Argument(metavar="ID", help="Approval id (the short code).")]


def _call(ctx: typer.Context, method: str, params: dict[str, Any] | None = None) -> Any:
    from gsv_cli.runner import call

    return call(ctx.obj, method, params)


@app.command("list")
def list_approvals(ctx: typer.Context, json_output: JsonOpt = False) -> None:
    """Pending approvals: the exact call, why it waits, when it expires."""
    from gsv_core.protocol.methods import TOOL_APPROVALS

    show_listing(ctx.obj, TOOL_APPROVALS, None, "approvals", json_output, _print_pending)


def _print_pending(pending: list[dict[str, Any]]) -> None:
    rows = [
        [a["approvalId"], a["tool"], a["summary"], a["reason"], a["sessionKey"],
         output.when(a["expiresAt"])]
        for a in pending
    ]  # fmt: skip
    output.print_table(["id", "tool", "call", "why", "session", "expires"], rows,
                       empty="nothing waits for approval")  # fmt: skip


def _pending_id(ctx: typer.Context, approval_id: str) -> str:
    """The whole id of the pending approval `approval_id` starts (the short code)."""
    from gsv_cli.ids import expand_prefix
    from gsv_core.protocol.methods import TOOL_APPROVALS

    pending = [a["approvalId"] for a in _call(ctx, TOOL_APPROVALS)["approvals"]]
    return expand_prefix(approval_id, pending, "pending approval")


@app.command("show")
def show(ctx: typer.Context, approval_id: ApprovalId, json_output: JsonOpt = False) -> None:
    """One pending call whole: what runs if you approve it (the list and the prompts
    show the start and end of a long one)."""
    import json

    from gsv_core.protocol.methods import TOOL_APPROVALS

    params = {"approvalId": _pending_id(ctx, approval_id), "full": True}
    [approval] = _call(ctx, TOOL_APPROVALS, params)["approvals"]
    state: CliState = ctx.obj
    if state.wants_json(json_output):
        output.print_json(approval)
        return
    output.write_text(f"{approval['tool']} in {approval['sessionKey']}: {approval['reason']}\n")
    output.write_text(f"{approval['summary']}\n")
    output.write_text(json.dumps(approval["args"], indent=2, ensure_ascii=False) + "\n")


def _answer(ctx: typer.Context, approval_id: str, decision: str, remember: str | None) -> None:
    from gsv_core.protocol.methods import TOOL_APPROVE

    approval_id = _pending_id(ctx, approval_id)
    params: dict[str, Any] = {"approvalId": approval_id, "decision": decision}
    if remember:
        params["remember"] = remember
    result = _call(ctx, TOOL_APPROVE, params)
    state: CliState = ctx.obj
    if state.json:
        output.print_json(result)
        return
    verb = "approved" if decision == "allow" else "denied"
    output.write_text(f"{verb} {result['tool']} ({result['approvalId']})\n")
    for rule in result.get("rulesAdded") or []:
        output.write_text(f"always allowed from now on: {rule}\n")


@app.command("approve")
def approve(
    ctx: typer.Context,
    approval_id: ApprovalId,
    remember: Annotated[
        bool, typer.Option("--remember", help="Also allow this exact call again in the session.")
    ] = False,
    always: Annotated[
        bool,
        typer.Option(
            "--always", help="Also always allow its program and subcommand (gsv approvals rules)."
        ),
    ] = False,
) -> None:
    """Let the call run."""
    _answer(ctx, approval_id, "allow", "always" if always else "session" if remember else None)


@app.command("deny")
def deny(ctx: typer.Context, approval_id: ApprovalId) -> None:
    """Refuse the call (the agent is told it was denied)."""
    _answer(ctx, approval_id, "deny", None)


ALLOW_PATH = "toolApproval.allow"
RuleWords = Annotated[
    list[str], typer.Argument(metavar="PROGRAM [SUBCOMMAND]...", help="e.g. git commit")
]


def _rules(ctx: typer.Context) -> list[str]:
    from gsv_core.protocol.methods import CONFIG_GET

    return list(_call(ctx, CONFIG_GET, {"path": ALLOW_PATH}).get("value") or [])


def _store(ctx: typer.Context, rules: list[str]) -> None:
    from gsv_core.protocol.methods import CONFIG_SET

    _call(ctx, CONFIG_SET, {"path": ALLOW_PATH, "value": rules})


@app.command("rules")
def rules(ctx: typer.Context, json_output: JsonOpt = False) -> None:
    """The programs you always allow, as added from a prompt or with `allow`."""
    from gsv_core.protocol.methods import CONFIG_GET

    state: CliState = ctx.obj
    listed = _rules(ctx)
    if state.wants_json(json_output):
        output.print_listing("rules", listed)
        return
    mode = _call(ctx, CONFIG_GET, {"path": "toolApproval.mode"}).get("value")
    output.print_table(["rule"], [[rule] for rule in listed], empty="no rules yet")
    output.print_hint(f"mode: {mode} (gsv config set toolApproval.mode allowlist|denylist|off)")


@app.command("allow")
def allow(ctx: typer.Context, words: RuleWords) -> None:
    """Always allow a program with its subcommand or script: git commit, python3 job.py.

    A rule for an interpreter alone (python3) never allows inline code (python3 -c)."""
    rule = " ".join(words)
    listed = _rules(ctx)
    if rule not in listed:
        _store(ctx, [*listed, rule])
    output.write_text(f"always allowed: {rule}\n")


@app.command("remove")
def remove(ctx: typer.Context, words: RuleWords) -> None:
    """Remove a rule (the program asks again)."""
    rule = " ".join(words)
    listed = _rules(ctx)
    if rule not in listed:
        output.fail(f"no rule {rule!r}", hint="gsv approvals rules lists them")
    _store(ctx, [r for r in listed if r != rule])
    output.write_text(f"removed: {rule}\n")
