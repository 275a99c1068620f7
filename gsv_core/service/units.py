"""User-level service units: a systemd `--user` unit on Linux, a launchd agent on macOS.

`systemd_unit()` and `launchd_plist()` are pure generators. `install_service()` and
`uninstall_service()` write or remove the file, then ask the service manager to
(de)activate it on a best-effort basis: without systemctl/launchctl, or without a user
bus (CI, containers, ssh sessions without lingering), the result says the file was
written and which commands to run by hand. They never fail because the manager did.
"""

from __future__ import annotations

import os
import plistlib
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Literal

from gsv_core.errors import InvalidParams
from gsv_core.errors import Unavailable
from gsv_core.paths import gsv_home
from gsv_core.service.background import output_file

Manager = Literal["systemd", "launchd"]

RESTART_SEC = 5
# how long one systemctl/launchctl call may take before we give up and tell the user
COMMAND_TIMEOUT = 30.0

_NAME = re.compile(r"[a-z][a-z0-9-]*")
_ENV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# characters that need no quoting in a systemd command line or assignment
_SYSTEMD_SAFE = re.compile(r"[A-Za-z0-9_@+=:,./-]+")
_C_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


@dataclass(frozen=True)
class ServiceSpec:
    """What to run as a service: `name` is "gateway" or "node"; argv[0] is absolute."""

    name: str
    description: str
    argv: Sequence[str]
    environment: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ServiceResult:
    """What install/uninstall did: the file, the commands run, and what is left to the user."""

    manager: Manager
    path: Path
    changed: bool  # the file was written (install) or removed (uninstall)
    ran: tuple[str, ...] = ()
    manual: tuple[str, ...] = ()  # commands the user still has to run by hand
    problem: str | None = None  # why the service manager could not be used

    @property
    def activated(self) -> bool:
        return not self.manual


# -- pure generators ---------------------------------------------------------------------


def systemd_quote(word: str, *, in_command: bool = True) -> str:
    """One word of a systemd command line or assignment, quoted only when needed.

    Specifiers (`%`) are expanded everywhere, so `%` becomes `%%`; in command lines `$`
    starts a variable, so it becomes `$$` (Environment= values take `$` literally).
    """
    escaped = word.replace("%", "%%")
    if in_command:
        escaped = escaped.replace("$", "$$")
    if word and _SYSTEMD_SAFE.fullmatch(word):
        return escaped
    return '"' + "".join(_c_escape(ch) for ch in escaped) + '"'


def _c_escape(ch: str) -> str:
    if ch in _C_ESCAPES:
        return _C_ESCAPES[ch]
    if ord(ch) < 0x20 or ord(ch) == 0x7F:
        return f"\\x{ord(ch):02x}"
    return ch


def systemd_unit(description: str, argv: Sequence[str], environment: Mapping[str, str]) -> str:
    """The text of a systemd user unit that runs `argv` and restarts it when it fails."""
    _check_argv(argv)
    lines = [
        "[Unit]",
        f"Description={_one_line(description).replace('%', '%%')}",
        "",
        "[Service]",
        "Type=simple",
        "ExecStart=" + " ".join(systemd_quote(arg) for arg in argv),
    ]
    for key, value in sorted(environment.items()):
        _check_env_key(key)
        lines.append("Environment=" + systemd_quote(f"{key}={value}", in_command=False))
    lines += [
        "Restart=on-failure",
        f"RestartSec={RESTART_SEC}",
        "",
        "[Install]",
        "WantedBy=default.target",
        "",
    ]
    return "\n".join(lines)


def launchd_plist(
    label: str,
    argv: Sequence[str],
    environment: Mapping[str, str],
    stdout_path: Path,
    stderr_path: Path,
) -> bytes:
    """The XML of a launchd agent that runs `argv` at load and again if it fails."""
    _check_argv(argv)
    for key in environment:
        _check_env_key(key)
    agent = {
        "Label": label,
        "ProgramArguments": list(argv),
        "EnvironmentVariables": dict(environment),
        "RunAtLoad": True,
        # like systemd's Restart=on-failure: a clean exit (e.g. after SIGTERM) stays down
        "KeepAlive": {"SuccessfulExit": False},
        "ThrottleInterval": RESTART_SEC,
        "StandardOutPath": str(stdout_path),
        "StandardErrorPath": str(stderr_path),
    }
    return plistlib.dumps(agent, fmt=plistlib.FMT_XML)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _check_argv(argv: Sequence[str]) -> None:
    if not argv or not Path(argv[0]).is_absolute():
        raise InvalidParams(f"a service needs an absolute program path, got {list(argv)!r}")


def _check_env_key(key: str) -> None:
    if not _ENV_KEY.fullmatch(key):
        raise InvalidParams(f"invalid environment variable name {key!r}")


# -- where units live --------------------------------------------------------------------


def service_manager(platform: str | None = None) -> Manager:
    """The service manager of a platform (`sys.platform` by default)."""
    platform = sys.platform if platform is None else platform
    if platform.startswith("linux"):
        return "systemd"
    if platform == "darwin":
        return "launchd"
    raise Unavailable(
        f"services can be installed on Linux (systemd) and macOS (launchd), not on {platform}",
        retryable=False,
    )


def unit_name(name: str) -> str:
    return f"gsv-{_checked_name(name)}.service"


def launchd_label(name: str) -> str:
    return f"dev.gsv.{_checked_name(name)}"


def unit_path(name: str, manager: Manager) -> Path:
    """Where the unit of service `name` is written for a manager."""
    if manager == "launchd":
        return Path.home() / "Library" / "LaunchAgents" / f"{launchd_label(name)}.plist"
    return _systemd_user_dir() / unit_name(name)


def _systemd_user_dir() -> Path:
    raw = os.environ.get("XDG_CONFIG_HOME", "")
    # the XDG spec says to ignore a relative XDG_CONFIG_HOME
    base = Path(raw) if raw and Path(raw).is_absolute() else Path.home() / ".config"
    return base / "systemd" / "user"


def _checked_name(name: str) -> str:
    if not _NAME.fullmatch(name):
        raise InvalidParams(f"invalid service name {name!r}")
    return name


def service_environment() -> dict[str, str]:
    """The environment a service needs to find what the user's shell finds: PATH and,
    when set, GSV_HOME (absolute, since the service starts in another directory)."""
    env = {"PATH": os.environ.get("PATH") or os.defpath}
    home = gsv_home()
    if home is not None:
        env["GSV_HOME"] = str(home.resolve())
    return env


# -- install / uninstall -----------------------------------------------------------------


def install_service(spec: ServiceSpec, *, platform: str | None = None) -> ServiceResult:
    """Write the unit for `spec` and try to enable and start it."""
    manager = service_manager(platform)
    path = unit_path(spec.name, manager)
    replaced = path.exists()
    _write_atomically(path, _render(spec, manager))
    if manager == "launchd":
        if replaced:  # unload the old job first; failing here just means it was not loaded
            _run_one(["launchctl", "unload", str(path)])
        commands = [["launchctl", "load", "-w", str(path)]]
    else:
        unit = unit_name(spec.name)
        commands = [
            ["systemctl", "--user", "daemon-reload"],
            ["systemctl", "--user", "enable", "--now", unit],
        ]
        if replaced:  # a running service keeps its old settings until restarted
            commands.append(["systemctl", "--user", "restart", unit])
    ran, left, problem = _run_best_effort(commands)
    return ServiceResult(manager, path, True, ran, tuple(shlex.join(c) for c in left), problem)


def uninstall_service(name: str, *, platform: str | None = None) -> ServiceResult:
    """Stop and disable the service `name` (best effort) and remove its unit file."""
    manager = service_manager(platform)
    path = unit_path(name, manager)
    if not path.exists():
        return ServiceResult(manager, path, changed=False)
    if manager == "launchd":
        ran, left, problem = _run_best_effort([["launchctl", "unload", "-w", str(path)]])
        manual = [f"launchctl remove {launchd_label(name)}"] if left else []
        path.unlink()
        return ServiceResult(manager, path, True, ran, tuple(manual), problem)
    unit = unit_name(name)
    ran, left, problem = _run_best_effort([["systemctl", "--user", "disable", "--now", unit]])
    path.unlink()
    # `disable` removes this link; when it could not run, do it so no dangling link stays
    (path.parent / "default.target.wants" / unit).unlink(missing_ok=True)
    more, left_after, problem_after = _run_best_effort([["systemctl", "--user", "daemon-reload"]])
    manual = ([f"systemctl --user stop {unit}"] if left else []) + [
        shlex.join(c) for c in left_after
    ]
    return ServiceResult(manager, path, True, ran + more, tuple(manual), problem or problem_after)


def _render(spec: ServiceSpec, manager: Manager) -> bytes:
    if manager == "launchd":
        console = output_file(spec.name)
        console.parent.mkdir(parents=True, exist_ok=True)  # launchd does not create it
        return launchd_plist(
            launchd_label(spec.name), spec.argv, spec.environment, console, console
        )
    return systemd_unit(spec.description, spec.argv, spec.environment).encode()


def _write_atomically(path: Path, content: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(content)
    tmp.replace(path)


def _run_best_effort(
    commands: list[list[str]],
) -> tuple[tuple[str, ...], list[list[str]], str | None]:
    """Run commands in order until one fails: (commands run, commands left, problem)."""
    ran: list[str] = []
    for index, command in enumerate(commands):
        problem = _run_one(command)
        if problem is not None:
            return tuple(ran), commands[index:], problem
        ran.append(shlex.join(command))
    return tuple(ran), [], None


def _run_one(command: list[str]) -> str | None:
    if shutil.which(command[0]) is None:
        return f"{command[0]} was not found on PATH"
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"`{shlex.join(command)}` could not run: {exc}"
    if done.returncode != 0:
        why = done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}"
        return f"`{shlex.join(command)}` failed: {why}"
    return None
