"""What the `gsv gateway` and `gsv node` groups share: stopping a background process,
showing and following its log, installing and removing its user service, and printing
what happened. The process-specific parts (how to start, how to tell it is healthy) stay
in their command modules."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import typer

from gsv_cli import output

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from gsv_core.service.units import ServiceResult


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
