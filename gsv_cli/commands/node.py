"""`gsv node ...`: this machine as a node the agent can use.

    gsv node --foreground | gsv node run      the daemon in this process (Ctrl-C stops it)
    gsv node                                  install (or refresh) and start the user service
    gsv node install|uninstall                the systemd user unit / launchd agent
    gsv node start|stop|status|logs           a background process with a pid file

Id: --id > local config node.id > node-<hostname>. Workspace: --workspace >
node.workspace > the current directory; never the home directory or `/` (the agent
writes in its workspace without asking). The gateway URL comes from the global options
(--url/GSV_URL/local config).

Credential: each node connects with its own, kept in the secret store as
`node.credentials.<id>`. A node on another machine gets it once with
`gsv node --join CODE --url ws://host:port/ws` (the code from `gsv nodes invite`); on the
gateway's own machine the node asks for it with the owner token (--token/GSV_TOKEN/secret
store), so nothing needs typing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Annotated
from typing import Any

import typer

from gsv_cli import output
from gsv_cli import services
from gsv_cli.apps import plain_app
from gsv_cli.options import JsonOpt
from gsv_cli.state import CliState

if TYPE_CHECKING:
    from gsv_core.node.daemon import NodeSettings

app = plain_app(
    help="Run this machine as a node: its tools become the agent's hands here.",
    invoke_without_command=True,
)

NAME = "node"
START_WAIT = 10.0
CONNECTED = "connected to "

NodeId = Annotated[str | None, typer.Option("--id", help="Node id (default: node-<hostname>).")]
Workspace = Annotated[
    Path | None,
    typer.Option("--workspace", "-w", help="Directory relative paths resolve against."),
]
Restrict = Annotated[
    bool | None,
    typer.Option(
        "--restrict-to-workspace/--no-restrict-to-workspace",
        help="Confine file tools and Bash's workdir to the workspace.",
    ),
]


def resolve_settings(
    node_id: str | None,
    workspace: Path | None,
    restrict: bool | None,
    sandbox: str | None = None,
    sandbox_network: bool | None = None,
) -> dict[str, Any]:
    """The node's id, workspace, restriction and sandbox, resolved flag > local config >
    default; a workspace that is the home directory or `/` is refused here, for every
    command, as is a sandbox mode that does not exist."""
    from gsv_core.defaults import SANDBOX_MODES
    from gsv_core.localconfig import load_local_config
    from gsv_core.node.daemon import default_node_id

    local = load_local_config()
    mode = (sandbox or local.get("node.sandbox") or "auto").lower()
    if mode not in SANDBOX_MODES:
        output.fail(f"--sandbox must be one of {', '.join(SANDBOX_MODES)}, not {sandbox!r}")
    network = local.get("node.sandboxNetwork") if sandbox_network is None else sandbox_network
    configured_ws = local.get("node.workspace")
    chosen = (workspace or Path(configured_ws or Path.cwd())).expanduser().resolve()
    refuse_unsafe_workspace(chosen)
    return {
        "node_id": node_id or local.get("node.id") or default_node_id(),
        "workspace": chosen,
        "restrict": bool(
            restrict if restrict is not None else local.get("node.restrict_to_workspace")
        ),
        "sandbox": mode,
        "sandbox_network": bool(network),
        "sandbox_writable": tuple(local.get("node.sandboxWritable") or ()),
        "sandbox_hidden": tuple(local.get("node.sandboxHidden") or ()),
    }


def refuse_unsafe_workspace(workspace: Path, command: str = "gsv node run") -> None:
    """Refuse a workspace that is the home directory or `/`: relative paths would land
    among the login profile, ssh keys and settings, and every file the agent writes
    inside the workspace is written without asking (docs/approvals.md). The hint names
    the `command` that was run."""
    home = Path.home().resolve()
    if workspace in (home, Path(workspace.anchor)):
        what = "your home directory" if workspace == home else "the root of the file system"
        output.fail(
            f"workspace {workspace} is {what}: the agent writes files in its workspace "
            "without asking",
            hint=f"run it in a project directory (cd ~/project && {command}) or choose one: "
            f"{command} --workspace DIR",
        )


Sandbox = Annotated[
    str | None,
    typer.Option(
        "--sandbox",
        help="OS sandbox of the agent's commands: auto, bwrap, seatbelt or off (docs/sandbox.md).",
    ),
]
SandboxNetwork = Annotated[
    bool | None,
    typer.Option(
        "--sandbox-network/--no-sandbox-network",
        help="Whether sandboxed commands reach the network (default: no).",
    ),
]
Join = Annotated[
    str | None,
    typer.Option("--join", help="One-time code from `gsv nodes invite` on the gateway's machine."),
]


# a command that needs only the node's resolved settings (see _with_node_settings)
NodeAction = Callable[[CliState, dict[str, Any]], None]


def credential_name(node_id: str) -> str:
    """Where this node's own credential is kept in the secret store."""
    return f"node.credentials.{node_id}"


@app.callback()
def node(
    ctx: typer.Context,
    foreground: Annotated[
        bool, typer.Option("--foreground", help="Run here, not as a service.")
    ] = False,
    node_id: NodeId = None,
    workspace: Workspace = None,
    restrict: Restrict = None,
    sandbox: Sandbox = None,
    sandbox_network: SandboxNetwork = None,
    join: Join = None,
) -> None:
    """Without a subcommand: install and start the node service (or --foreground: run here)."""
    if ctx.invoked_subcommand is not None:
        return
    if foreground:
        run(ctx, node_id, workspace, restrict, sandbox, sandbox_network, join)
        return
    chosen = resolve_settings(node_id, workspace, restrict, sandbox, sandbox_network)
    if join:
        _join(ctx.obj, chosen, join)
    install(ctx.obj, chosen)


@app.command("run")
def run(
    ctx: typer.Context,
    node_id: NodeId = None,
    workspace: Workspace = None,
    restrict: Restrict = None,
    sandbox: Sandbox = None,
    sandbox_network: SandboxNetwork = None,
    join: Join = None,
    log_stderr: Annotated[bool, typer.Option("--log-stderr/--no-log-stderr", hidden=True)] = True,
) -> None:
    """Run the node daemon in the foreground until Ctrl-C or SIGTERM."""
    from gsv_cli.logsetup import BACKUP_COUNT
    from gsv_cli.logsetup import MAX_BYTES
    from gsv_cli.logsetup import configure_logging
    from gsv_cli.logsetup import env_int
    from gsv_cli.runner import run as run_async

    state: CliState = ctx.obj
    chosen = resolve_settings(node_id, workspace, restrict, sandbox, sandbox_network)
    if not chosen["workspace"].is_dir():
        output.fail(f"workspace {chosen['workspace']} is not a directory")
    if join:
        _join(state, chosen, join)
    log_file = services.log_file(NAME)
    configure_logging(
        log_file,
        stderr=log_stderr,
        max_bytes=env_int("GSV_NODE_LOG_MAX_BYTES", MAX_BYTES, minimum=1024),
        backups=env_int("GSV_NODE_LOG_MAX_FILES", BACKUP_COUNT),
    )
    run_async(lambda: _run_until_signalled(state, chosen, log_file), fast=True)


async def _run_until_signalled(state: CliState, chosen: dict[str, Any], log_file: Path) -> None:
    from gsv_core.node.daemon import NodeDaemon

    settings = _node_settings(state, chosen, log_file)
    daemon = NodeDaemon(settings)  # SandboxUnavailable: a named sandbox cannot run here
    async with services.stop_signal() as stopping:
        output.write_text(
            f"gsv node {settings.node_id} serving {settings.workspace} to {settings.url}\n"
        )
        _say_sandbox(daemon.sandbox.describe())
        await daemon.run(stopping)


def _say_sandbox(described: dict[str, Any]) -> None:
    """One line on what confines the agent's commands here; a warning when nothing does."""
    if described["backend"] == "none":
        output.print_hint(f"warning: the agent's commands are NOT sandboxed: {described['reason']}")
        return
    network = "with network" if described["network"] else "no network"
    output.write_text(f"commands sandboxed by {described['backend']} ({network})\n")


def _node_settings(
    state: CliState, chosen: dict[str, Any], log_file: Path | None = None
) -> NodeSettings:
    """Settings with this node's credential, or the owner token to get one with."""
    from gsv_core.localconfig import get_secret
    from gsv_core.localconfig import set_secret
    from gsv_core.node.daemon import NodeSettings

    name = credential_name(chosen["node_id"])

    def keep(credential: str) -> None:
        set_secret(name, credential)

    return NodeSettings(
        url=state.url(),
        token=get_secret(name),
        owner_token=state.token(),
        on_credential=keep,
        node_id=chosen["node_id"],
        workspace=chosen["workspace"],
        restrict_to_workspace=chosen["restrict"],
        sandbox=chosen["sandbox"],
        sandbox_network=chosen["sandbox_network"],
        sandbox_writable=chosen["sandbox_writable"],
        sandbox_hidden=chosen["sandbox_hidden"],
        log_file=log_file,
    )


def _join(state: CliState, chosen: dict[str, Any], code: str) -> None:
    """Exchange a one-time code for this node's credential and keep it; exit 1 if refused."""
    import asyncio

    from gsv_core.node.daemon import NodeDaemon

    settings = _node_settings(state, chosen)
    settings.join_code = code

    async def join() -> None:
        daemon = NodeDaemon(settings)
        try:
            await daemon.join()
        finally:
            await daemon.toolset.close()

    with output.reporting_errors():
        asyncio.run(join())
    output.write_text(
        f"joined {settings.url} as node {chosen['node_id']}; its credential is in the "
        "secret store\n"
    )


def _run_argv(state: CliState, chosen: dict[str, Any], *, log_stderr: bool) -> list[str]:
    """The `gsv node run` command line for start and install (the token is read from the
    secret store at run time, never put on a command line)."""
    options = ["--id", chosen["node_id"], "--workspace", str(chosen["workspace"])]
    options.append(
        "--restrict-to-workspace" if chosen["restrict"] else "--no-restrict-to-workspace"
    )
    options += ["--sandbox", chosen["sandbox"]]
    options.append("--sandbox-network" if chosen["sandbox_network"] else "--no-sandbox-network")
    return services.run_argv(NAME, options, log_stderr=log_stderr, url=state.url())


def _with_node_settings(name: str) -> Callable[[NodeAction], NodeAction]:
    """Register `action(state, chosen)` as command `name`, taking the node's setting flags
    (one signature for every command that only needs the resolved settings)."""

    def register(action: NodeAction) -> NodeAction:
        def command(
            ctx: typer.Context,
            node_id: NodeId = None,
            workspace: Workspace = None,
            restrict: Restrict = None,
            sandbox: Sandbox = None,
            sandbox_network: SandboxNetwork = None,
        ) -> None:
            chosen = resolve_settings(node_id, workspace, restrict, sandbox, sandbox_network)
            action(ctx.obj, chosen)

        command.__doc__ = action.__doc__
        app.command(name)(command)
        return action

    return register


@_with_node_settings("install")
def install(state: CliState, chosen: dict[str, Any]) -> None:
    """Install (or refresh) the node as a user service and start it.

    Remembers the id, workspace, sandbox and gateway URL in the local config."""
    from gsv_core.localconfig import load_local_config
    from gsv_core.localconfig import set_secret

    with output.reporting_errors():
        local = load_local_config()
        local.set("node.id", chosen["node_id"])
        local.set("node.workspace", str(chosen["workspace"]))
        local.set("node.restrict_to_workspace", chosen["restrict"])
        local.set("node.sandbox", chosen["sandbox"])
        local.set("node.sandboxNetwork", chosen["sandbox_network"])
        local.set("gateway.url", state.url())
        local.save()
        if state.token_flag:  # the service reads the token from the secret store
            set_secret("gateway.token", state.token_flag)
    result = services.install(
        NAME, "gsv node", lambda stderr: _run_argv(state, chosen, log_stderr=stderr)
    )
    if not result.activated:
        output.print_hint("or run it as a background process now: gsv node start")


@_with_node_settings("start")
def start(state: CliState, chosen: dict[str, Any]) -> None:
    """Start the node as a background process and wait until it has connected."""
    from gsv_core.service import background

    pid = services.start_background(NAME, _run_argv(state, chosen, log_stderr=False))
    background.write_state(NAME, {"pid": pid, "nodeId": chosen["node_id"], "url": state.url()})
    connected = _wait_connected(pid)
    output.write_text(
        f"gsv node {chosen['node_id']} started (pid {pid})\n"
        f"  workspace: {chosen['workspace']}\n  gateway:   {state.url()}\n"
        f"  log:       {services.log_file(NAME)}\n"
    )
    if not connected:
        output.print_hint(
            "warning: not connected to the gateway yet; it keeps retrying (see `gsv node logs`)"
        )


def _wait_connected(pid: int) -> bool:
    """Whether the node logged a successful connect within START_WAIT seconds."""
    log_file = services.log_file(NAME)

    def connected() -> bool | None:
        text = log_file.read_text(errors="replace")[-65536:] if log_file.exists() else ""
        return True if CONNECTED in text else None

    exited = "the node exited at start"
    return services.wait_until_ready(NAME, pid, connected, START_WAIT, exited) is not None


@app.command("status")
def status(ctx: typer.Context, json_output: JsonOpt = False) -> None:
    """Show the background process and whether the gateway sees this node online.

    Exits 0 when the gateway lists the node as online, 1 otherwise."""
    from gsv_core.service import background

    state: CliState = ctx.obj
    recorded = background.read_state(NAME) or {}
    node_id = recorded.get("nodeId") or resolve_settings(None, None, None)["node_id"]
    pid = background.running_pid(NAME)
    online, problem = _online_at_gateway(state, node_id)
    report = {
        "nodeId": node_id,
        "pid": pid,
        "running": pid is not None,
        "online": online,
        "gateway": state.url(),
        "problem": problem,
        "log": str(services.log_file(NAME)),
    }
    if state.wants_json(json_output):
        output.print_json(report)
    else:
        process = f"running (pid {pid})" if pid else "not running"
        seen = "online" if online else f"not online ({problem})" if problem else "not online"
        output.write_text(
            f"node:               {node_id}\nbackground process: {process}\n"
            f"gateway:            {report['gateway']} -> {seen}\n"
            f"log:                {report['log']}\n"
        )
    raise typer.Exit(0 if online else 1)


def _online_at_gateway(state: CliState, node_id: str) -> tuple[bool, str | None]:
    import asyncio

    from gsv_cli.runner import gateway_client
    from gsv_core.errors import GsvError
    from gsv_core.protocol.methods import NODES_LIST

    async def ask() -> list[dict[str, Any]]:
        async with gateway_client(state) as client:
            nodes: list[dict[str, Any]] = (await client.call(NODES_LIST, timeout=10))["nodes"]
            return nodes

    try:
        nodes = asyncio.run(ask())
    except GsvError as exc:
        return False, exc.message
    return any(n["nodeId"] == node_id and n["online"] for n in nodes), None


services.add_commands(app, NAME)  # stop, logs, uninstall
