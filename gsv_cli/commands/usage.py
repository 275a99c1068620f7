"""`gsv usage [--since 7d] [--until …] [--by source|session|model|day|agent] [--json]`:
what the agent's model calls used and cost, from the gateway's usage ledger.

A table of the groups with their tokens and cost (a cost shown as "?" when no call of the
group had a known price: set one with `gsv config set pricing.MODEL '{...}'`), and on a
terminal a bar per day of the range. `--json` prints the ledger's answer as is.
"""

from __future__ import annotations

import datetime as dt
import sys
from typing import Annotated
from typing import Any

import typer

from gsv_cli import output
from gsv_cli.options import JsonOpt
from gsv_cli.state import CliState

GROUPS = ("source", "session", "model", "day", "agent")
BAR_WIDTH = 30


def parse_moment(text: str, now_ms: int) -> int:
    """A span back from now (`7d`, `24h`, `1h30m`: the cron durations) or a date
    `2026-11-01` (its local midnight) as epoch ms; BadParameter otherwise."""
    from gsv_core.cron.phrases import parse_duration

    text = text.strip()
    try:
        return now_ms - parse_duration(text)
    except ValueError:
        pass
    try:
        day = dt.date.fromisoformat(text)
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is neither a span like 7d, 24h, 30m, 2w nor a date like 2026-11-01"
        ) from None
    midnight = dt.datetime.combine(day, dt.time()).astimezone()
    return int(midnight.timestamp() * 1000)


def usage(
    ctx: typer.Context,
    since: Annotated[
        str, typer.Option("--since", help="Start: a span back from now (7d, 24h) or a date.")
    ] = "7d",
    until: Annotated[
        str | None, typer.Option("--until", help="End (default: now), as --since.")
    ] = None,
    by: Annotated[str, typer.Option("--by", help=f"Group by: {', '.join(GROUPS)}.")] = "source",
    json_output: JsonOpt = False,
) -> None:
    """Show tokens and cost of the agent's model calls, by source, session, model or day."""
    from gsv_cli.runner import call
    from gsv_core.protocol.methods import USAGE_GET

    if by not in GROUPS:
        raise typer.BadParameter(f"--by must be one of {', '.join(GROUPS)}, not {by!r}")
    state: CliState = ctx.obj
    now = int(dt.datetime.now().timestamp() * 1000)
    params: dict[str, Any] = {"since": parse_moment(since, now), "groupBy": by}
    if until is not None:
        params["until"] = parse_moment(until, now)
    result = call(state, USAGE_GET, params)
    if state.wants_json(json_output):
        output.print_json(result)
        return
    print_report(result)
    if sys.stdout.isatty() and by != "day" and result["groups"]:
        print_days(call(state, USAGE_GET, {**params, "groupBy": "day"})["groups"])


def print_report(result: dict[str, Any]) -> None:
    rows = [_row(group["name"], group) for group in result["groups"]]
    if rows:
        rows.append(_row("total", result["total"]))
    columns = [result["groupBy"], "calls", "input", "output", "cache read", "cache write", "USD"]
    output.print_table(columns, rows, empty="no model calls in this range")
    if any(group["unpricedCalls"] for group in result["groups"]):
        output.print_hint(
            "? or *: some calls used a model with no known price; add one with "
            'gsv config set pricing.MODEL \'{"input": 3, "output": 15}\' (USD per Mtok)'
        )


def _row(name: str, sums: dict[str, Any]) -> list[str]:
    return [name, str(sums["calls"]), f"{sums['input']:,}", f"{sums['output']:,}",
            f"{sums['cacheRead']:,}", f"{sums['cacheWrite']:,}", _cost(sums)]  # fmt: skip


def _cost(sums: dict[str, Any]) -> str:
    cost = sums["costUsd"]
    if cost is None:
        return "?"
    return f"{cost:.4f}" + ("*" if sums["unpricedCalls"] else "")


def print_days(days: list[dict[str, Any]]) -> None:
    """A bar per day: cost when known, else tokens (a terminal-only picture)."""
    priced = any(day["costUsd"] for day in days)
    values = [(day["costUsd"] or 0.0) if priced else day["input"] + day["output"] for day in days]
    top = max(values) or 1
    lines = ["", "per day (" + ("USD" if priced else "tokens") + "):"]
    for day, value in zip(days, values, strict=True):
        bar = "█" * max(1 if value else 0, round(BAR_WIDTH * value / top))
        shown = f"{value:.4f}" if priced else f"{int(value):,}"
        lines.append(f"  {day['name']}  {bar:<{BAR_WIDTH}}  {shown}")
    output.write_text("\n".join(lines) + "\n")
