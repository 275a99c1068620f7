"""`gsv memory search QUERY [--scope] [--since] [--until] [--limit] [--json]`,
`gsv memory reindex`, `gsv memory status [--json]`: the gateway's index of notes and
every past conversation (docs/memory.md). The owner's search sees everything."""

from __future__ import annotations

from typing import Annotated
from typing import Any

import typer

from gsv_cli import output
from gsv_cli.apps import plain_app
from gsv_cli.options import JsonOpt
from gsv_cli.state import CliState

app = plain_app(help="Search notes and every past conversation.", no_args_is_help=True)
SCOPES = ("all", "notes", "sessions")
TIME_HELP = "an ISO date or date-time (UTC), or an age such as 7d, 12h"


@app.command("search")
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="Plain words to look for.")],
    scope: Annotated[str, typer.Option("--scope", help="all, notes or sessions.")] = "all",
    since: Annotated[str | None, typer.Option("--since", help=f"From: {TIME_HELP}.")] = None,
    until: Annotated[str | None, typer.Option("--until", help=f"To: {TIME_HELP}.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=50, help="How many hits.")] = 10,
    json_output: JsonOpt = False,
) -> None:
    """Find notes and messages (archived ones too) by their words, best first."""
    from gsv_cli.runner import call
    from gsv_core.protocol.methods import MEMORY_SEARCH

    if scope not in SCOPES:
        raise typer.BadParameter(f"--scope must be one of {', '.join(SCOPES)}, not {scope!r}")
    state: CliState = ctx.obj
    params: dict[str, Any] = {"query": query, "scope": scope, "limit": limit}
    params |= {k: v for k, v in (("since", since), ("until", until)) if v is not None}
    result = call(state, MEMORY_SEARCH, params)
    if state.wants_json(json_output):
        output.print_json(result)
        return
    if not result["results"]:
        output.write_text("no matches\n")
    for hit in result["results"]:
        output.write_text(f"{hit['ref']}  {where(hit)}\n    {' '.join(hit['snippet'].split())}\n")


def where(hit: dict[str, Any]) -> str:
    """Where a hit came from, on one line."""
    if hit["source"] == "note":
        start, end = hit["lines"]
        return f"{hit['agentId']}/{hit['path']}:{start}-{end}"
    archived = f" (archived: {hit['archive']})" if hit.get("archived") else ""
    return f"{hit['sessionKey']} #{hit['messageIndex']} {hit['role']} {hit['time']}{archived}"


@app.command("reindex")
def reindex(ctx: typer.Context, json_output: JsonOpt = False) -> None:
    """Forget the index and build it again in the background (gsv memory status)."""
    from gsv_core.protocol.methods import MEMORY_REINDEX

    if _answer(ctx, MEMORY_REINDEX, json_output) is not None:
        output.write_text("rebuilding the memory index in the background\n")
        output.print_hint("see how far it got with `gsv memory status`")


@app.command("status")
def status(ctx: typer.Context, json_output: JsonOpt = False) -> None:
    """Show what the index holds and how far a build got."""
    from gsv_core.protocol.methods import MEMORY_STATUS

    found = _answer(ctx, MEMORY_STATUS, json_output)
    if found is None:
        return
    state_line = found["state"]
    if found["state"] == "building":
        state_line += f" ({found['done']} of {found['total']})"
    if found.get("error"):
        state_line += f": {found['error']}"
    size = "?" if found.get("bytes") is None else f"{found['bytes'] / 1e6:.1f} MB"
    meaning = "off (BM25 alone)"
    if isinstance(embedded := found.get("embeddings"), dict):
        meaning = f"{embedded.get('model')}: {embedded.get('vectors', 0):,} pieces embedded"
        meaning += f"; last error: {embedded['error']}" if embedded.get("error") else ""
    output.write_text(
        f"state     {state_line}\n"
        f"messages  {found['messages']:,} ({found['archivedMessages']:,} archived)\n"
        f"notes     {found['notes']:,} files, {found['noteChunks']:,} chunks\n"
        f"size      {size}\n"
        f"meaning   {meaning}\n"
    )


def _answer(ctx: typer.Context, method: str, json_output: bool) -> dict[str, Any] | None:
    """The gateway's answer to a call without params; None once printed as JSON."""
    from gsv_cli.runner import call

    state: CliState = ctx.obj
    found: dict[str, Any] = call(state, method)
    if state.wants_json(json_output):
        output.print_json(found)
        return None
    return found
