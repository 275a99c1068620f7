"""What the `gsv gateway` and `gsv node` groups share: their `run` command line, starting
one in the background and waiting until it is ready, running until a signal, stopping it,
showing and following its log, installing and removing its user service, and printing
what happened. The process-specific parts (its options, how to tell it is ready) stay in
their command modules."""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Annotated
from typing import NoReturn
from typing import TypeVar

import typer

from gsv_cli import output

if TYPE_CHECKING:
    import asyncio
    from collections.abc import AsyncIterator
    from collections.abc import Callable
    from collections.abc import Sequence

    from gsv_core.service.units import ServiceResult

T = TypeVar("T")
POLL = 0.1  # seconds between two looks at a starting process


def add_commands(app: typer.Typer, name: str) -> None:
    """`stop`, `logs` and `uninstall`, alike for every process gsv runs in the background
    or as a user service."""

    @app.command("stop", help=f"Stop the background {name} (SIGTERM, then SIGKILL).")
    def stop(
        timeout: Annotated[
            float, typer.Option("--timeout", min=0, help="Seconds to wait before SIGKILL.")
        ] = 10.0,
    ) -> None:
        stop_process(name, timeout)

    @app.command("logs", help=f"Show the end of the {name} log (and follow it with --follow).")
    def logs(
        lines: Annotated[int, typer.Option("--lines", "-n", min=0, help="Lines to show.")] = 100,
        follow: Annotated[
            bool, typer.Option("--follow", "-f", help="Keep printing new lines.")
        ] = False,
    ) -> None:
        show_log(name, lines, follow, f"The {name} writes it once started (`gsv {name} start`).")

    @app.command("uninstall", help=f"Stop and remove the {name}'s user service.")
    def uninstall_() -> None:
        uninstall(name)


def run_argv(
    name: str, options: Sequence[str], *, log_stderr: bool, url: str | None = None
) -> list[str]:
    """The `gsv [--url URL] NAME run OPTIONS` command line that start and install run."""
    argv = [sys.executable, "-m", "gsv_cli", *(["--url", url] if url else []), name, "run"]
    return [*argv, *options, *([] if log_stderr else ["--no-log-stderr"])]


def start_background(name: str, argv: Sequence[str]) -> int:
    """Start `argv` as the background process `name`; its pid (already running: exit 1)."""
    from gsv_core.errors import Conflict
    from gsv_core.service import background

    try:
        return background.start(name, list(argv))
    except Conflict as exc:
        output.fail(exc.message, f"Stop it with `gsv {name} stop`, or see `gsv {name} status`.")


def wait_until_ready(
    name: str, pid: int, ready: Callable[[], T | None], seconds: float, exited: str
) -> T | None:
    """What `ready()` gives once it gives something, or None after `seconds`; a process
    that dies meanwhile ends the command with `exited` and its last output."""
    from gsv_core.service import background

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not background.is_running(pid):
            background.stop(name)  # clears the pid file
            fail_with_output(exited, background.output_file(name))
        found = ready()
        if found is not None:
            return found
        time.sleep(POLL)
    return None


@contextlib.asynccontextmanager
async def stop_signal() -> AsyncIterator[asyncio.Event]:
    """An event set by SIGINT (Ctrl-C) or SIGTERM (how a service manager stops us) while
    the block runs."""
    import asyncio
    import signal

    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    signals = (signal.SIGINT, signal.SIGTERM)
    for sig in signals:
        loop.add_signal_handler(sig, stopping.set)
    try:
        yield stopping
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)


def log_file(name: str) -> Path:
    from gsv_core.paths import resolve_paths

    return resolve_paths().log_file(name)


def stop_process(name: str, timeout: float) -> None:
    """Stop the background process `name` (exit 0 whether or not it was running)."""
    from gsv_core.service import background

    pid = background.stop(name, timeout=timeout)
    output.write_text(
        f"{name} is not running\n" if pid is None else f"stopped {name} (pid {pid})\n"
    )


def show_log(name: str, lines: int, follow: bool, hint: str) -> None:
    """Print the end of `name`'s log; with `follow`, keep printing until Ctrl-C (130)."""
    from gsv_core.errors import NotFound
    from gsv_core.service import background

    path = log_file(name)
    if follow:
        try:
            for line in background.follow(path, lines=lines):
                output.write_text(line + "\n")
        except KeyboardInterrupt:
            raise typer.Exit(130) from None
        return
    try:
        shown = background.tail(path, lines)
    except NotFound as exc:
        output.fail(exc.message, hint)
    output.write_text("".join(line + "\n" for line in shown))


def install(
    name: str, description: str, argv_for: Callable[[bool], Sequence[str]]
) -> ServiceResult:
    """Install `name` as a user service running `argv_for(log_to_stderr)`; print the result."""
    from gsv_core.service import units

    with output.reporting_errors():
        manager = units.service_manager()
        # under systemd stderr goes to the journal; launchd would append it to a file forever
        argv = argv_for(manager == "systemd")
        spec = units.ServiceSpec(name, description, list(argv), units.service_environment())
        result = units.install_service(spec)
    print_service_result(result, "wrote")
    if result.activated:
        output.write_text(f"the {name} service is enabled and started\n")
    if result.manager == "systemd":
        output.write_text(
            "to keep it running while you are logged out: loginctl enable-linger $USER\n"
        )
    return result


def uninstall(name: str) -> None:
    from gsv_core.service import units

    with output.reporting_errors():
        result = units.uninstall_service(name)
    if not result.changed:
        output.write_text(f"no {name} service installed (looked for {result.path})\n")
        return
    print_service_result(result, "removed")


def print_service_result(result: ServiceResult, verb: str) -> None:
    output.write_text(f"{verb} {result.path}\n")
    for command in result.ran:
        output.write_text(f"ran: {command}\n")
    if result.manual:
        output.print_hint(f"warning: {result.problem}")
        output.write_text("run by hand:\n" + "".join(f"  {command}\n" for command in result.manual))


def fail_with_output(message: str, console: Path) -> NoReturn:
    """Exit 1 with `message` and the last lines a dead background process printed."""
    from gsv_core.errors import NotFound
    from gsv_core.service import background

    output.print_error(f"{message}; its last output ({console}):")
    with contextlib.suppress(NotFound):
        for line in background.tail(console, 20):
            output.print_hint(f"  {line}")
    raise typer.Exit(1)
