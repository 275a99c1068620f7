"""`gsv gateway ...`: the gateway in the foreground, as a background process, or as a service.

    run                   foreground until Ctrl-C or SIGTERM (what start and install run)
    start|stop|status     a background process with pid, state and output files
    logs                  the gateway's rotating log file
    install|uninstall     a systemd user unit (Linux) or launchd agent (macOS)

The module stays light for `gsv --help`: the server (websockets, pydantic) and the
service machinery are imported inside command bodies.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Annotated
from typing import Any

import typer

from gsv_cli import output
from gsv_cli import remembered_url
from gsv_cli import services
from gsv_cli.apps import plain_app
from gsv_cli.options import JsonOpt
from gsv_cli.state import CliState
from gsv_cli.state import http_base
from gsv_core.defaults import DEFAULT_GATEWAY_HOST
from gsv_core.defaults import DEFAULT_GATEWAY_PORT

if TYPE_CHECKING:
    import ssl
    from contextlib import AbstractAsyncContextManager
    from contextlib import AsyncExitStack

    from gsv_core.gateway.server import RunningGateway

app = plain_app(
    help="Run the gateway: foreground, background or as a service.", no_args_is_help=True
)

log = logging.getLogger(__name__)

NAME = "gateway"
START_TIMEOUT = 15.0
HEALTH_TIMEOUT = 2.0
LISTENING = "gsv gateway listening on "


class LogLevel(enum.StrEnum):
    debug = "debug"
    info = "info"
    warning = "warning"
    error = "error"


Host = Annotated[
    str | None,
    typer.Option("--host", help="Address to listen on (default: from the gateway URL)."),
]
Port = Annotated[
    int | None,
    typer.Option(
        "--port", min=0, max=65535, help="Port to listen on (default: from the gateway URL)."
    ),
]
TlsCert = Annotated[
    Path | None,
    typer.Option("--tls-cert", help="PEM certificate chain: serve wss:// (with --tls-key)."),
]
TlsKey = Annotated[Path | None, typer.Option("--tls-key", help="PEM private key of --tls-cert.")]
InsecureNoTls = Annotated[
    bool,
    typer.Option(
        "--insecure-no-tls",
        help="Allow plain ws:// beyond loopback (only on a LAN or VPN you trust).",
    ),
]


@dataclass(frozen=True)
class Listen:
    """Where and how `gsv gateway run` listens (also carried by start and install)."""

    host: str = DEFAULT_GATEWAY_HOST
    port: int = DEFAULT_GATEWAY_PORT
    tls_cert: Path | None = None
    tls_key: Path | None = None
    insecure_no_tls: bool = False

    def argv(self) -> list[str]:
        argv = ["--host", self.host, "--port", str(self.port)]
        if self.tls_cert and self.tls_key:
            argv += ["--tls-cert", str(self.tls_cert), "--tls-key", str(self.tls_key)]
        if self.insecure_no_tls:
            argv.append("--insecure-no-tls")
        return argv


def _address(state: CliState, host: str | None, port: int | None) -> tuple[str, int]:
    """--host/--port, else the gateway URL every other command uses (--url, GSV_URL, the
    local config): its port, and its host when that is this machine."""
    from urllib.parse import urlsplit

    if host is not None and port is not None:
        return host, port
    parts = urlsplit(state.url())
    try:
        url_port = parts.port
    except ValueError:
        url_port = None
    local = parts.hostname in ("127.0.0.1", "localhost", "::1")
    return (
        host
        if host is not None
        else (parts.hostname or DEFAULT_GATEWAY_HOST)
        if local
        else DEFAULT_GATEWAY_HOST,
        port if port is not None else url_port or DEFAULT_GATEWAY_PORT,
    )


def _listen_options(
    state: CliState,
    host: str | None,
    port: int | None,
    tls_cert: Path | None,
    tls_key: Path | None,
    insecure_no_tls: bool,
) -> Listen:
    """Where and how to listen, from the options `run`, `start` and `install` share."""
    if (tls_cert is None) != (tls_key is None):
        output.fail("--tls-cert and --tls-key go together", "Give both PEM files, or neither.")
    cert, key = (p.expanduser().resolve() if p else None for p in (tls_cert, tls_key))
    return Listen(*_address(state, host, port), cert, key, insecure_no_tls)


@app.command("run")
def run(
    ctx: typer.Context,
    host: Host = None,
    port: Port = None,
    tls_cert: TlsCert = None,
    tls_key: TlsKey = None,
    insecure_no_tls: InsecureNoTls = False,
    log_level: Annotated[
        LogLevel, typer.Option("--log-level", help="Least severe level logged.")
    ] = LogLevel.info,
    log_stderr: Annotated[bool, typer.Option("--log-stderr/--no-log-stderr", hidden=True)] = True,
    remember: Annotated[bool | None, typer.Option("--remember/--no-remember", hidden=True)] = None,
) -> None:
    """Run the gateway in the foreground until Ctrl-C or SIGTERM."""
    from gsv_cli.logsetup import configure_logging
    from gsv_cli.runner import run as run_async
    from gsv_core.paths import resolve_paths

    state: CliState = ctx.obj
    listen = _listen_options(state, host, port, tls_cert, tls_key, insecure_no_tls)
    configure_logging(resolve_paths().log_file(NAME), level=log_level.value, stderr=log_stderr)
    # later commands are pointed here only when the user chose where it listens (start
    # and install say whether they did: their child always gets --host and --port)
    chose = remember if remember is not None else host is not None or port is not None
    chosen = state if chose else None
    run_async(lambda: _serve_until_signalled(listen, chosen), fast=True)


@dataclass(frozen=True)
class _Place:
    """Whether the user named where to listen, and the URL later commands looked at before."""

    chose: bool
    looked_at: str


ListenAction = Callable[[CliState, Listen, _Place], None]


def _with_listen_options(name: str) -> Callable[[ListenAction], Callable[..., None]]:
    """Register `action(state, listen, place)` as command `name`, taking the listen options
    that `start` and `install` share; returns the typer command (up and onboard call it)."""

    def register(action: ListenAction) -> Callable[..., None]:
        def command(
            ctx: typer.Context,
            host: Host = None,
            port: Port = None,
            tls_cert: TlsCert = None,
            tls_key: TlsKey = None,
            insecure_no_tls: InsecureNoTls = False,
        ) -> None:
            state: CliState = ctx.obj
            looked_at = state.url()  # before the gateway may save where it listens
            listen = _listen_options(state, host, port, tls_cert, tls_key, insecure_no_tls)
            action(state, listen, _Place(_chose_place(state, host, port), looked_at))

        command.__doc__ = action.__doc__
        app.command(name)(command)
        return command

    return register


@_with_listen_options("start")
def start(state: CliState, listen: Listen, place: _Place) -> None:
    """Start the gateway in the background and wait until it answers /health."""
    from gsv_core.service import background

    pid = services.start_background(NAME, _run_argv(listen, place.chose, log_stderr=False))
    url = _wait_until_healthy(pid)
    log_path = services.log_file(NAME)
    background.write_state(NAME, {"pid": pid, "url": url, "log": str(log_path)})
    output.write_text(
        f"gsv gateway started (pid {pid})\n"
        f"  url:    {url}\n  health: {_health_url(url)}\n  log:    {log_path}\n"
    )
    if place.chose and not remembered_url.same_place(url, place.looked_at):
        output.write_text(remembered_url.saved_line(url))


@app.command("status")
def status(
    ctx: typer.Context,
    url: Annotated[
        str | None, typer.Option("--url", "-u", help="Gateway URL to check (default: as started).")
    ] = None,
    json_output: JsonOpt = False,
) -> None:
    """Show the background gateway's pid and whether the gateway answers /health.

    Exits 0 when the gateway is healthy, 1 otherwise."""
    from gsv_core.service import background

    state = ctx.obj if isinstance(ctx.obj, CliState) else CliState()
    pid = background.running_pid(NAME)
    recorded = background.read_state(NAME) or {}
    target = url or state.url_flag or recorded.get("url") or state.url()
    health = probe_health(target)
    report = {
        "pid": pid,
        "running": pid is not None,
        "url": target,
        "healthy": bool(health and health.get("status") == "healthy"),
        "health": health,
        "log": str(services.log_file(NAME)),
    }
    _print_status(report, state.wants_json(json_output))
    raise typer.Exit(0 if report["healthy"] else 1)


@_with_listen_options("install")
def install(state: CliState, listen: Listen, place: _Place) -> None:
    """Install the gateway as a user service (systemd on Linux, launchd on macOS), start it."""
    result = services.install(
        NAME,
        "gsv gateway",
        lambda stderr: _run_argv(listen, place.chose, log_stderr=stderr),
    )
    if result.activated:
        output.write_text("see `gsv gateway status`\n")


services.add_commands(app, NAME)  # stop, logs, uninstall


# -- run: the foreground server ----------------------------------------------------------


async def _serve_until_signalled(listen: Listen, chosen: CliState | None = None) -> None:
    """Serve until SIGINT or SIGTERM, then close cleanly; with `chosen` (the user named the
    host or port), later commands are pointed here if they would look elsewhere."""
    from contextlib import AsyncExitStack

    from gsv_cli.logsetup import FILE_ONLY
    from gsv_core.errors import GsvError
    from gsv_core.gateway.server import ServerConfig
    from gsv_core.gateway.server import serve
    from gsv_core.loopback import is_loopback
    from gsv_core.paths import resolve_paths

    config = ServerConfig(
        database=resolve_paths().database,
        tls=_tls_context(listen),
        insecure_no_tls=listen.insecure_no_tls,
        freeze_heap=True,
    )
    host, port = listen.host, listen.port
    try:
        async with services.stop_signal() as stopping, AsyncExitStack() as stack:
            running = await _listen(stack, serve(config, host, port), host, port)
            output.write_text(f"{LISTENING}{running.url} (health: {running.http_url}/health)\n")
            if chosen is not None and remembered_url.remember(chosen, _reachable(running.url)):
                output.write_text(remembered_url.saved_line(_reachable(running.url)))
            if not is_loopback(host):
                output.write_text(_exposure(running.url, listen))
            await stopping.wait()
            log.info("gateway shutting down")
    except GsvError as exc:
        log.error("gateway failed: %s", exc.message, extra=FILE_ONLY)  # runner prints it
        raise


async def _listen(
    stack: AsyncExitStack,
    server: AbstractAsyncContextManager[RunningGateway],
    host: str,
    port: int,
) -> RunningGateway:
    """Enter serve(); socket errors become one-line GsvErrors instead of tracebacks."""
    import errno
    import socket

    from gsv_core.errors import Conflict
    from gsv_core.errors import GsvError

    try:
        running = await stack.enter_async_context(server)
    except socket.gaierror as exc:
        raise GsvError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise Conflict(
                f"cannot listen on {host}:{port}: the address is already in use "
                "(another gateway? see `gsv gateway status`)"
            ) from exc
        raise GsvError(f"gateway failed to start on {host}:{port}: {exc}") from exc
    return running


def _tls_context(listen: Listen) -> ssl.SSLContext | None:
    """The server's TLS context from --tls-cert/--tls-key; a bad file is a one-line error."""
    import ssl

    from gsv_core.errors import InvalidParams

    if listen.tls_cert is None or listen.tls_key is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(listen.tls_cert, listen.tls_key)
    except (OSError, ssl.SSLError) as exc:
        raise InvalidParams(
            f"cannot use --tls-cert {listen.tls_cert} / --tls-key {listen.tls_key}: {exc}"
        ) from exc
    return context


def _exposure(url: str, listen: Listen) -> str:
    """What listening beyond loopback exposes, said once at start."""
    transport = (
        "TLS (wss): traffic is encrypted"
        if listen.tls_cert
        else "PLAIN ws (--insecure-no-tls): anyone on the network path can read traffic"
    )
    return (
        f"exposed beyond this machine at {url}\n"
        f"  transport: {transport}\n"
        "  access:    only with the owner token or a node/channel credential; browsers only "
        "from gateway.allowedOrigins\n"
    )


def _chose_place(state: CliState, host: str | None, port: int | None) -> bool:
    """The user named where the gateway listens, and not where commands look (--url or
    GSV_URL are theirs to keep): the gateway may save its URL for later commands."""
    return (host is not None or port is not None) and not remembered_url.caller_chose_url(state)


def _run_argv(listen: Listen, chose: bool, *, log_stderr: bool) -> list[str]:
    """The command line of `gsv gateway run` with these options, for start and install;
    `chose`: the user named the host or port (so the gateway saves where it listens)."""
    remember = "--remember" if chose else "--no-remember"
    return services.run_argv(NAME, [*listen.argv(), remember], log_stderr=log_stderr)


# -- start: waiting for health -----------------------------------------------------------


def _wait_until_healthy(pid: int) -> str:
    """The gateway's URL once /health answers; on failure show its output and exit 1."""
    from gsv_core.service import background

    console = background.output_file(NAME)
    exited = "the gateway exited before it was ready"
    url = services.wait_until_ready(NAME, pid, lambda: _healthy(console), START_TIMEOUT, exited)
    if url is None:
        background.stop(NAME)
        services.fail_with_output(
            f"the gateway did not answer /health within {START_TIMEOUT:g} s", console
        )
    return url


def _healthy(console: Path) -> str | None:
    """The announced URL once /health answers there."""
    url = _announced_url(console)
    return url if url is not None and probe_health(url) is not None else None


def _announced_url(console: Path) -> str | None:
    """The URL from the `gsv gateway listening on ...` line, made reachable from here."""
    try:
        text = console.read_text(errors="replace")
    except FileNotFoundError:
        return None
    for line in text.splitlines():
        if line.startswith(LISTENING):
            return _reachable(line.removeprefix(LISTENING).split()[0])
    return None


def _reachable(url: str) -> str:
    # a wildcard bind address is not something to connect to: use loopback instead
    return url.replace("//0.0.0.0:", "//127.0.0.1:", 1).replace("//[::]:", "//[::1]:", 1)


def _health_url(url: str) -> str:
    return http_base(url) + "/health"


def probe_health(url: str, timeout: float = HEALTH_TIMEOUT) -> dict[str, Any] | None:
    """GET /health next to a gateway URL (stdlib, no proxies); its JSON body, or None."""
    import http.client
    import json
    from urllib.parse import urlsplit

    health = urlsplit(_health_url(url))
    if health.scheme not in ("http", "https") or not health.hostname:
        return None
    cls = http.client.HTTPSConnection if health.scheme == "https" else http.client.HTTPConnection
    connection = cls(health.hostname, health.port, timeout=timeout)
    try:
        connection.request("GET", health.path)
        response = connection.getresponse()
        body = response.read()
    except (OSError, http.client.HTTPException):
        return None
    finally:
        connection.close()
    try:
        data = json.loads(body) if response.status == 200 else None
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


# -- output ------------------------------------------------------------------------------


def _print_status(report: dict[str, Any], as_json: bool) -> None:
    if as_json:
        output.print_json(report)
        return
    process = f"running (pid {report['pid']})" if report["running"] else "not running"
    health = "healthy" if report["healthy"] else ("unhealthy" if report["health"] else "no answer")
    output.write_text(
        f"background process: {process}\n"
        f"url:    {report['url']}\nhealth: {health}\nlog:    {report['log']}\n"
    )
