"""`gsv up` and `gsv down`: the one command to get going, and the one to stop what it started.

    gsv up [--workspace DIR] [-s SESSION]    a local gateway (started in the background
                                             if /health does not answer), a node serving
                                             DIR (default: the current directory, never
                                             the home directory or /; started
                                             in the background unless this machine's node
                                             is already connected), then `gsv chat`
    gsv down                                 stops what `gsv up` started, and nothing else

What `gsv up` started is recorded in `run/up.json` under the gsv home (see
gsv_core.paths), so `gsv down` never stops a gateway or node it did not start. The hidden
`--no-chat` flag skips the chat (scripts and tests); without a terminal the chat is
skipped too.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated
from typing import Any

import typer

from gsv_cli import output
from gsv_cli.state import CliState
from gsv_core.defaults import DEFAULT_GATEWAY_PORT
from gsv_core.defaults import DEFAULT_GATEWAY_URL

STATE = "up"  # run/up.json
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


def up(
    ctx: typer.Context,
    workspace: Annotated[
        Path | None,
        typer.Option("--workspace", "-w", help="Directory the node serves (default: here)."),
    ] = None,
    session: Annotated[
        str | None, typer.Option("--session", "-s", help="Session to open (default: main).")
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(
            "--port",
            min=1,
            max=65535,
            help="Run this home's gateway on this local port (remembered).",
        ),
    ] = None,
    no_chat: Annotated[
        bool, typer.Option("--no-chat", hidden=True, help="Start things; do not open the chat.")
    ] = False,
) -> None:
    """Make sure a local gateway and a node for this directory run, then open the chat."""
    state: CliState = ctx.obj
    from gsv_cli.commands.node import refuse_unsafe_workspace

    if port is not None:
        _use_port(state, port)
    directory = (workspace or Path.cwd()).expanduser().resolve()
    if not directory.is_dir():
        output.fail(f"workspace {directory} is not a directory")
    refuse_unsafe_workspace(directory, "gsv up")  # before anything starts, not at the node step
    started = _load_started()
    _ensure_gateway(ctx, state, started)
    _ensure_node(ctx, state, directory, started)
    _tell(started)
    if no_chat:
        return
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        output.print_hint(
            "not a terminal: open the chat in one with `gsv chat`, or in a browser: `gsv web`"
        )
        return
    _offer_onboarding(ctx, state)
    from gsv_cli.commands.chat import open_chat

    open_chat(state, session)
    if started:
        output.write_text("gsv keeps running in the background; `gsv down` stops it\n")


def down(
    timeout: Annotated[
        float, typer.Option("--timeout", min=0, help="Seconds to wait before SIGKILL.")
    ] = 10.0,
) -> None:
    """Stop the gateway and node that `gsv up` started (nothing else)."""
    from gsv_core.service import background

    recorded = background.read_state(STATE) or {}
    started = _load_started()
    background.state_file(STATE).unlink(missing_ok=True)
    if not started:
        output.write_text("nothing to stop: gsv up has not started anything that still runs\n")
    for name in ("node", "gateway"):  # the node first: it would only reconnect in vain
        if name in started:
            pid = background.stop(name, timeout=timeout)
            output.write_text(f"stopped {name} (pid {pid})\n")
        elif name in recorded and (running := background.running_pid(name)) is not None:
            # up started one, and something restarted it since (gsv gateway start): not up's
            output.print_hint(
                f"left the {name} running (pid {running}): it is not the one gsv up started "
                f"(that one was replaced, e.g. by `gsv {name} start`); stop it with "
                f"`gsv {name} stop`"
            )


# -- gateway -----------------------------------------------------------------------------


def _ensure_gateway(ctx: typer.Context, state: CliState, started: dict[str, Any]) -> None:
    from gsv_cli.commands import gateway
    from gsv_core.service import background

    url = state.url()
    if gateway.probe_health(url) is not None:
        _refuse_a_strangers(state, url)
        output.write_text(f"gateway: already running at {url}\n")
        return
    host, port = _local_address(url)
    gateway.start(ctx, host=host, port=port)  # prints; exits 1 on failure
    recorded = background.read_state(gateway.NAME) or {}
    started[gateway.NAME] = {"pid": recorded.get("pid"), "url": recorded.get("url", url)}
    _save_started(started)  # now: a failing node start must not hide it from `gsv down`


def _use_port(state: CliState, port: int) -> None:
    """`--port`: this home's gateway on 127.0.0.1:PORT, remembered as its `gateway.url`
    so every later command of this home finds it."""
    from gsv_core.localconfig import load_local_config

    state.url_flag = f"ws://127.0.0.1:{port}/ws"
    with output.reporting_errors():
        local = load_local_config()
        local.set("gateway.url", state.url_flag)
        local.save()


def _refuse_a_strangers(state: CliState, url: str) -> None:
    """A gateway answers where this home's would run: go on only if it is this home's
    (it takes this home's token); another home's (a second GSV_HOME) is said, with the
    way out, instead of an "Unauthorized" from the node step."""
    from gsv_cli.runner import call_quietly
    from gsv_core.errors import Forbidden
    from gsv_core.errors import GsvError
    from gsv_core.errors import Unauthorized
    from gsv_core.protocol.methods import GATEWAY_STATUS

    try:
        call_quietly(state, GATEWAY_STATUS, timeout=15)
    except (Unauthorized, Forbidden):
        output.fail(
            f"a gateway answers at {url}, but it is not this home's: it refuses this "
            "home's token (another GSV_HOME's gateway, or another user's)",
            "start this home's on another port: gsv up --port 8788 (or pass that "
            "gateway's token with --token to use it)",
        )
    except GsvError:
        return  # another trouble: the steps after say what it is


def _local_address(url: str) -> tuple[str, int]:
    """Host and port of a gateway URL this machine may start; exit 1 for a remote one."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    if host not in LOCAL_HOSTS:
        output.fail(
            f"the gateway at {url} does not answer, and gsv up only starts a local one",
            "Start it on its machine (`gsv gateway start`), or point gsv at a local "
            f"gateway with --url {DEFAULT_GATEWAY_URL}.",
        )
    try:
        port = parts.port or DEFAULT_GATEWAY_PORT
    except ValueError:
        output.fail(f"invalid gateway URL {url!r}")
    return host, port


def _offer_onboarding(ctx: typer.Context, state: CliState) -> None:
    """No usable model yet: offer the setup here, before the chat (no second terminal)."""
    from gsv_cli.runner import call_quietly
    from gsv_core.errors import GsvError
    from gsv_core.protocol.methods import GATEWAY_STATUS

    try:
        model = call_quietly(state, GATEWAY_STATUS, timeout=15)["model"]
    except GsvError:
        return  # the chat says what is wrong with the gateway
    if model["ready"] or not typer.confirm("No model is set up yet. Set one up now?", True):
        return
    from gsv_cli.commands.onboard import onboard

    try:
        onboard(ctx, provider=None, key_env=None, base_url=None, model=None, yes=False,
                no_test=False, ask=False)  # fmt: skip
    except typer.Exit:
        output.print_hint("set a model up later with `gsv onboard`; opening the chat")


# -- node --------------------------------------------------------------------------------


def _ensure_node(
    ctx: typer.Context, state: CliState, directory: Path, started: dict[str, Any]
) -> None:
    from gsv_cli.commands import node
    from gsv_core.service import background

    node_id = _node_id()
    running = background.running_pid(node.NAME)
    if _online(state, node_id):
        output.write_text(f"node: {node_id} already connected\n")
        _warn_other_workspace(started, directory)
        return
    if running is not None:
        output.write_text(f"node: already running (pid {running}), not connected yet\n")
        return
    node.start(state, node.resolve_settings(None, directory, None))  # prints; exits 1
    pid = background.running_pid(node.NAME)
    started[node.NAME] = {"pid": pid, "nodeId": node_id, "workspace": str(directory)}
    _save_started(started)


def _node_id() -> str:
    from gsv_core.localconfig import load_local_config
    from gsv_core.node.daemon import default_node_id

    configured = load_local_config().get("node.id")
    return str(configured) if configured else default_node_id()


def _online(state: CliState, node_id: str) -> bool:
    from gsv_cli.runner import gateway_client
    from gsv_cli.runner import run
    from gsv_core.protocol.methods import NODES_LIST

    async def ask() -> bool:
        async with gateway_client(state) as client:
            listed = await client.call(NODES_LIST, timeout=10)
        return any(n["nodeId"] == node_id and n["online"] for n in listed["nodes"])

    return run(ask)


def _warn_other_workspace(started: dict[str, Any], directory: Path) -> None:
    served = (started.get("node") or {}).get("workspace")
    if served and served != str(directory):
        output.print_hint(
            f"note: that node serves {served}, not {directory}; "
            "`gsv down` then `gsv up` here to switch"
        )


# -- what up started ---------------------------------------------------------------------


def _load_started() -> dict[str, Any]:
    """What an earlier `gsv up` started and is still running (the rest is forgotten)."""
    from gsv_core.service import background

    recorded = background.read_state(STATE) or {}
    return {
        name: entry
        for name, entry in recorded.items()
        if isinstance(entry, dict) and entry.get("pid") == background.running_pid(name)
    }


def _save_started(started: dict[str, Any]) -> None:
    from gsv_core.service import background

    background.write_state(STATE, started)


def _tell(started: dict[str, Any]) -> None:
    if started:
        names = " and the ".join(name for name in ("gateway", "node") if name in started)
        output.write_text(f"`gsv down` stops the {names} that gsv up started\n")
