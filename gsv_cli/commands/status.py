"""`gsv status [--json]`: one screen of where you stand: the gateway (url, version, up
since), the model and whether it can be used, nodes, channels, cron, what waits for
you, spend against the budgets, and the database's size on disk. Secrets are never in it,
so it is safe to paste. Exit 0 when the gateway answers."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import typer

from gsv_cli import output
from gsv_cli.options import JsonOpt
from gsv_cli.state import CliState
from gsv_core.usage.spend import PERIODS
from gsv_core.usage.spend import usd

# a gateway that answers but does not take this CLI's token: another's, or another home's
TOKEN_HINT = (
    "pass its owner token with --token or GSV_TOKEN (on its machine: gsv local-config get "
    "gateway.token --reveal); a gateway of another GSV_HOME on this port: start this home's "
    "on another one with `gsv up --port 8788`"
)


def status(ctx: typer.Context, json_output: JsonOpt = False) -> None:
    """Show the gateway, model, nodes, channels, cron and pending approvals at a glance."""
    from gsv_cli.runner import call_quietly
    from gsv_core import __version__
    from gsv_core.errors import Forbidden
    from gsv_core.errors import GsvError
    from gsv_core.errors import Unauthorized
    from gsv_core.protocol.methods import GATEWAY_STATUS

    state: CliState = ctx.obj
    url = state.url()
    refused = False
    try:
        found: dict[str, Any] | None = call_quietly(state, GATEWAY_STATUS, timeout=15)
        problem = None
    except (Unauthorized, Forbidden) as exc:  # it runs: this CLI's token is not its owner's
        found, problem, refused = None, exc.message, True
    except GsvError as exc:
        found, problem = None, exc.message
    if state.wants_json(json_output):
        gateway = {"url": url, "reachable": found is not None or refused, "problem": problem}
        output.print_json({"cli": __version__, "gateway": gateway, **(found or {})})
    elif refused:
        output.write_text(f"gateway   {url}: answers, but refused this CLI's token ({problem})\n")
        output.print_hint(TOKEN_HINT)
    elif found is None:
        output.write_text(f"gateway   {url}: not reachable ({problem})\n")
        output.print_hint("start one here with `gsv up` (or `gsv gateway start`)")
    else:
        output.write_text(render(url, found))
    raise typer.Exit(0 if found is not None else 1)


def render(url: str, found: dict[str, Any]) -> str:
    lines = [
        f"gateway   {url}  (gsv {found['version']}, up {_since(found['startedAt'])})",
        _model(found["model"]),
        _nodes(found["nodes"]),
        *_unsandboxed(found["nodes"]),
        _channels(found["channels"]),
        _cron(found["cron"]),
        f"waiting   {output.count(found['pendingApprovals'], 'approval')}, "
        f"{output.count(found['pendingPairings'], 'pairing request')}",
    ]
    if found.get("budget"):  # a gateway older than budgets has none
        lines.append(_budget(found["budget"]))
    if found.get("memory"):  # a gateway older than the memory index has none
        lines.append(_memory(found["memory"]))
    lines.extend(key_lines(found.get("providerKeys") or []))
    if found.get("storage"):  # a gateway older than this field has none
        lines.append(_storage(found["storage"]))
    return "\n".join(lines) + "\n"


def _memory(memory: dict[str, Any]) -> str:
    """The memory index: ready, or how far its background build got."""
    if memory.get("error"):
        return f"memory    {memory['error']} (gsv memory reindex to try again)"
    if memory["state"] == "building":
        return f"memory    building the index: {memory['done']} of {memory['total']}"
    return "memory    index ready (gsv memory search QUERY)"


def _storage(storage: dict[str, int]) -> str:
    """The database on disk, e.g. `database 12.3 MB (WAL 0.4 MB)`."""
    return (
        f"{'database':<10}{_megabytes(storage['databaseBytes'])} "
        f"(WAL {_megabytes(storage['walBytes'])})"
    )


def _megabytes(size: int) -> str:
    return f"{size / 1_000_000:.1f} MB"


def key_lines(marks: list[dict[str, Any]]) -> list[str]:
    """An API key set aside, by fingerprint, e.g. `keys      openai key-3fa2b1c9 rate
    limited, cooling down until 16:05`; the owner clears it by setting or testing it."""
    lines = []
    for mark in marks:
        if mark["state"] == "rejected":
            what = "not tried until you set it again or `gsv models test`"
        else:
            what = f"cooling down until {_clock(mark['until'])}"
        lines.append(f"{'keys':<10}{mark['provider']} {mark['key']} {mark['reason']}, {what}")
    return lines


def _clock(epoch_ms: int | None) -> str:
    import datetime as dt

    if epoch_ms is None:
        return "?"
    when = dt.datetime.fromtimestamp(epoch_ms / 1000).astimezone()
    today = dt.datetime.now().astimezone().date()
    return when.strftime("%H:%M" if when.date() == today else "%Y-%m-%d %H:%M")


def _budget(budget: dict[str, Any]) -> str:
    """Spend against each budget set, e.g. `$0.42 of $1.00 by background work today
    (REACHED)`."""
    parts = []
    for name, limit in budget["limits"].items():
        if limit is None:
            continue
        reached = " (REACHED)" if name in budget["reached"] else ""
        parts.append(f"{usd(budget['spent'][name])} of {usd(limit)} {PERIODS[name]}{reached}")
    shown = "; ".join(parts) if parts else "no limits: gsv config set budget.daily USD"
    return f"{'budget':<10}{shown}"


def _model(model: dict[str, Any]) -> str:
    name = f"{model['provider']}/{model['id']}"
    if model["ready"]:
        return f"model     {name}  ready"
    return f"model     {name}  NOT READY: {model.get('problem')}"


def _nodes(nodes: list[dict[str, Any]]) -> str:
    online = sum(1 for n in nodes if n["online"])
    lead = f"{online} of {len(nodes)} online: "
    none = "none: give the agent this machine with `gsv node --foreground`"
    return _listed("nodes", nodes, _node, none, lead)


def _node(node: dict[str, Any]) -> str:
    from gsv_core.protocol.sandbox_info import sandbox_words

    state = "online" if node["online"] else "offline"
    sandbox = sandbox_words(node.get("sandbox"))
    return f"{node['nodeId']} ({state}, {len(node['tools'])} tools, {sandbox})"


def _unsandboxed(nodes: list[dict[str, Any]]) -> list[str]:
    """A warning line, with its fix, per online node whose commands run unconfined."""
    from gsv_core.protocol.sandbox_info import unsandboxed_fix
    from gsv_core.protocol.sandbox_info import unsandboxed_problem

    lines = []
    for node in nodes:
        problem = unsandboxed_problem(node["nodeId"], node.get("sandbox"))
        if node["online"] and problem is not None:
            lines.append(f"{'':<10}WARNING: {problem}; fix {unsandboxed_fix(node.get('sandbox'))}")
    return lines


def _channels(channels: list[dict[str, Any]]) -> str:
    return _listed("channels", channels, _channel, "none running")


def _channel(channel: dict[str, Any]) -> str:
    name = f"{channel['channel']}:{channel['accountId']}"
    if channel["connected"]:
        return f"{name} connected"
    return f"{name} down ({channel.get('error') or 'not connected'})"


def _listed(
    label: str,
    items: list[dict[str, Any]],
    describe: Callable[[dict[str, Any]], str],
    none: str,
    lead: str = "",
) -> str:
    """One line of the screen: the label, then each item described (or `none`)."""
    shown = lead + ", ".join(describe(item) for item in items) if items else none
    return f"{label:<10}{shown}"


def _cron(cron: dict[str, Any]) -> str:
    text = f"cron      {output.count(cron['count'], 'job')}, {cron['dueCount']} due"
    if not cron.get("enabled", True):
        text += " (cron is disabled)"
    if cron.get("nextRunAtMs"):
        text += f", next {output.when(cron['nextRunAtMs'])}"
    return text


def _since(started_ms: int) -> str:
    seconds = max(0, int(time.time() - started_ms / 1000))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h {rest // 60}m" if hours else f"{rest // 60}m {rest % 60}s"
