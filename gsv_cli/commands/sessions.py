"""`gsv sessions ...` (alias `gsv session`): the agent's conversations.

    list | get [KEY] | stats [KEY] | reset [KEY] | compact [KEY] [-k N]
    history [KEY] | preview [KEY] [-l N] | set KEY PATH VALUE

KEY defaults to your CLI session (local config `session.default_key`, else
`agent:main:cli:dm:main`, which the gateway files under your main session). Any other KEY
may be cut short to its unique start (`gsv sessions get agent:main:tel`).
"""

from __future__ import annotations

import json
from typing import Annotated
from typing import Any

import typer

from gsv_cli import output
from gsv_cli.apps import plain_app
from gsv_cli.options import JsonOpt
from gsv_cli.reads import show
from gsv_cli.state import CliState

app = plain_app(help="List and manage the agent's sessions.", no_args_is_help=True)

KeyArg = Annotated[
    str | None,
    typer.Argument(metavar="[KEY]", help="Session key or its unique start (default: yours)."),
]
PAGE = 500  # sessions.list's largest page

# `set` paths -> how they become a session.patch
SET_PATHS = (
    "label, model (provider/id), thinkingLevel, systemPrompt, maxTokens, "
    "resetPolicy (JSON), resetPolicy.mode, resetPolicy.atHour, resetPolicy.idleMinutes"
)


def _key(ctx: typer.Context, raw: str | None, may_be_new: bool = False) -> str:
    """The session KEY names. None (or `main`) is your CLI session, taken as it is; any
    other key must be a session there is, or the start of exactly one session key
    (ambiguous or unknown: exit 1). `may_be_new` lets an unknown key through (`set` can
    configure a session before its first message)."""
    from gsv_core.localconfig import load_local_config
    from gsv_core.routing import CLI_SESSION_KEY
    from gsv_core.routing import cli_session_key

    key = cli_session_key(
        raw if raw is not None else load_local_config().get("session.default_key")
    )
    if raw is None or key == CLI_SESSION_KEY:
        return key
    return _existing_key(ctx.obj, key, may_be_new)


def _existing_key(state: CliState, given: str, may_be_new: bool) -> str:
    from gsv_cli.ids import resolve_prefix
    from gsv_cli.runner import run

    keys, canonical = run(lambda: _known_keys(state, given))
    if given in keys or canonical in keys:  # the gateway's spelling of the same session
        return given
    if any(k.startswith(given) for k in keys):
        return resolve_prefix(given, keys, "session", label="key")
    if may_be_new:
        return given
    output.fail(f"no session with a key starting {given!r}", "`gsv sessions list` shows them.")


async def _known_keys(state: CliState, given: str) -> tuple[list[str], str]:
    """Every session key (sessions.list page by page) and the gateway's canonical
    spelling of `given` (a bad key fails here with the gateway's reason)."""
    from gsv_cli.runner import gateway_client
    from gsv_core.protocol.methods import SESSION_GET
    from gsv_core.protocol.methods import SESSIONS_LIST

    keys: list[str] = []
    async with gateway_client(state) as client:
        while True:
            page = await client.call(SESSIONS_LIST, {"offset": len(keys), "limit": PAGE})
            keys += [s["sessionKey"] for s in page["sessions"]]
            if not page["sessions"] or len(keys) >= page["count"]:
                break
        canonical = (await client.call(SESSION_GET, {"sessionKey": given}))["sessionKey"]
    return keys, str(canonical)


def _call(ctx: typer.Context, method: str, params: dict[str, Any]) -> Any:
    from gsv_cli.runner import call

    return call(ctx.obj, method, params)


@app.command("list")
def list_sessions(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=500)] = 50,
    offset: Annotated[int, typer.Option("--offset", min=0)] = 0,
    json_output: JsonOpt = False,
) -> None:
    """Sessions by most recent activity."""
    from gsv_core.protocol.methods import SESSIONS_LIST

    params = {"limit": limit, "offset": offset}
    show(ctx.obj, SESSIONS_LIST, params, json_output, lambda r: _print_list(r, offset))


def _print_list(result: dict[str, Any], offset: int) -> None:
    rows = [
        [s["sessionKey"], s.get("kind", ""), s.get("label", ""), str(s.get("messageCount", "")),
         output.when(s.get("lastActiveAt"))]
        for s in result["sessions"]
    ]  # fmt: skip
    output.print_table(
        ["session", "kind", "label", "messages", "last active"], rows, empty="no sessions yet"
    )
    if result["count"] > offset + len(rows):
        output.print_hint(f"{result['count'] - offset - len(rows)} more: use --offset / --limit")


@app.command("get")
def get(ctx: typer.Context, key: KeyArg = None, json_output: JsonOpt = False) -> None:
    """A session's details: ids, tokens, settings, reset policy."""
    from gsv_core.protocol.methods import SESSION_GET

    show(ctx.obj, SESSION_GET, {"sessionKey": _key(ctx, key)}, json_output, _print_details)


def _print_details(result: dict[str, Any]) -> None:
    tokens = result["tokens"]
    lines = [
        f"session:   {result['sessionKey']} ({result.get('kind', 'chat')})",
        f"id:        {result['sessionId']}",
        f"label:     {result.get('label', '-')}",
        f"messages:  {result['messageCount']}",
        f"tokens:    {tokens['input']} in / {tokens['output']} out / {tokens['total']} total",
        f"settings:  {json.dumps(result.get('settings') or {})}",
        f"reset:     {json.dumps(result.get('resetPolicy') or {'mode': 'manual'})}",
        f"created:   {output.when(result['createdAt'])}",
        f"updated:   {output.when(result['updatedAt'])}",
        f"previous:  {len(result['previousSessionIds'])} earlier session(s)",
    ]
    output.write_text("\n".join(lines) + "\n")


@app.command("stats")
def stats(ctx: typer.Context, key: KeyArg = None, json_output: JsonOpt = False) -> None:
    """A session's counters: messages, tokens, whether it is working, queue length."""
    from gsv_core.protocol.methods import SESSION_STATS

    show(ctx.obj, SESSION_STATS, {"sessionKey": _key(ctx, key)}, json_output, _print_stats)


def _print_stats(result: dict[str, Any]) -> None:
    state = "working" if result["isProcessing"] else "idle"
    output.write_text(
        f"{result['sessionKey']}: {state}, {result['queueSize']} queued, "
        f"{result['messageCount']} messages, {result['tokens']['total']} tokens\n"
    )


@app.command("reset")
def reset(ctx: typer.Context, key: KeyArg = None, json_output: JsonOpt = False) -> None:
    """Archive the conversation and start a fresh session under the same key."""
    from gsv_core.protocol.methods import SESSION_RESET

    show(ctx.obj, SESSION_RESET, {"sessionKey": _key(ctx, key)}, json_output, _print_reset)


def _print_reset(result: dict[str, Any]) -> None:
    where = f" to {result['archivedTo']}" if result.get("archivedTo") else ""
    output.write_text(
        f"reset {result['sessionKey']}: archived {result['archivedMessages']} messages{where}\n"
    )


@app.command("compact")
def compact(
    ctx: typer.Context,
    key: KeyArg = None,
    keep: Annotated[int, typer.Option("--keep", "-k", min=1, help="Messages to keep.")] = 20,
    json_output: JsonOpt = False,
) -> None:
    """Keep the last N messages; the rest are archived (tool calls stay with results)."""
    from gsv_core.protocol.methods import SESSION_COMPACT

    params = {"sessionKey": _key(ctx, key), "keepMessages": keep}
    show(ctx.obj, SESSION_COMPACT, params, json_output, _print_compacted)


def _print_compacted(result: dict[str, Any]) -> None:
    output.write_text(
        f"kept {result['keptMessages']} messages, archived {result['trimmedMessages']}\n"
    )


@app.command("history")
def history(ctx: typer.Context, key: KeyArg = None, json_output: JsonOpt = False) -> None:
    """The session's current id and the ids of its earlier (reset) sessions."""
    from gsv_core.protocol.methods import SESSION_HISTORY

    show(ctx.obj, SESSION_HISTORY, {"sessionKey": _key(ctx, key)}, json_output, _print_history)


def _print_history(result: dict[str, Any]) -> None:
    lines = [f"current:  {result['currentSessionId']}"]
    lines += [f"earlier:  {sid}" for sid in reversed(result["previousSessionIds"])]
    output.write_text("\n".join(lines) + "\n")


@app.command("preview")
def preview(
    ctx: typer.Context,
    key: KeyArg = None,
    limit: Annotated[int, typer.Option("--limit", "-l", min=1, help="Last N messages.")] = 20,
    json_output: JsonOpt = False,
) -> None:
    """The last messages of a session, readable."""
    from gsv_core.protocol.methods import SESSION_PREVIEW

    params = {"sessionKey": _key(ctx, key), "limit": limit}
    show(ctx.obj, SESSION_PREVIEW, params, json_output, _print_preview)


def _print_preview(result: dict[str, Any]) -> None:
    from gsv_cli.transcript import render_messages

    shown = len(result["messages"])
    output.write_text(
        f"{result['sessionKey']}: last {shown} of {result['messageCount']} messages\n"
    )
    output.write_text(render_messages(result["messages"]))


@app.command("set")
def set_(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="Session key.")],
    path: Annotated[str, typer.Argument(help=f"One of: {SET_PATHS}.")],
    value: Annotated[str, typer.Argument(help="The value (JSON where structured).")],
) -> None:
    """Change one setting of a session (label, model, thinking level, reset policy ...)."""
    from gsv_core.protocol.methods import SESSION_PATCH

    patch = patch_for(path, value)
    full_key = _key(ctx, key, may_be_new=True)
    _call(ctx, SESSION_PATCH, {"sessionKey": full_key, **patch})
    output.write_text(f"set {path} on {full_key}\n")


def patch_for(path: str, value: str) -> dict[str, Any]:
    """The session.patch params for `set PATH VALUE` (usage error for unknown paths)."""
    name = path.removeprefix("settings.")
    if name == "label":
        return {"label": value}
    if name == "model":
        return {"settings": {"model": _model(value)}}
    if name in ("thinkingLevel", "systemPrompt"):
        return {"settings": {name: value}}
    if name == "maxTokens":
        return {"settings": {"maxTokens": _integer(value, path)}}
    if name == "resetPolicy":
        return {"resetPolicy": _json_object(value, path)}
    if name in ("resetPolicy.mode",):
        return {"resetPolicy": {"mode": value}}
    if name in ("resetPolicy.atHour", "resetPolicy.idleMinutes"):
        return {"resetPolicy": {name.split(".")[1]: _integer(value, path)}}
    raise typer.BadParameter(f"unknown path {path!r}; use one of: {SET_PATHS}", param_hint="PATH")


def _model(value: str) -> dict[str, str]:
    if value.strip().startswith("{"):
        return _json_object(value, "model")
    provider, sep, model_id = value.partition("/")
    if not sep or not provider or not model_id:
        raise typer.BadParameter(
            "use provider/model-id, e.g. anthropic/claude-sonnet-4", param_hint="VALUE"
        )
    return {"provider": provider, "id": model_id}


def _integer(value: str, path: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise typer.BadParameter(f"{path} needs a whole number", param_hint="VALUE") from None


def _json_object(value: str, path: str) -> dict[str, Any]:
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise typer.BadParameter(f"{path} needs a JSON object", param_hint="VALUE")
    return parsed
