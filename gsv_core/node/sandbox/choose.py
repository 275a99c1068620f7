"""Which sandbox a node uses (`node.sandbox`, `gsv node --sandbox`):

* `auto` (the default): the best that works here: bubblewrap on Linux, Seatbelt on
  macOS; where neither works, no sandbox, with the reason and the fix (`gsv status`,
  `gsv doctor` and `gsv security audit` say so);
* `bwrap`, `seatbelt`: that one, or the node does not start (SandboxUnavailable);
* `off`: no sandbox.

bubblewrap is tried once at start (`bwrap ... true`): installed is not enough where the
kernel or a container forbids user namespaces.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess

from gsv_core.defaults import SANDBOX_MODES
from gsv_core.node.sandbox.base import Sandbox
from gsv_core.node.sandbox.base import SandboxPolicy
from gsv_core.node.sandbox.base import SandboxUnavailable
from gsv_core.node.sandbox.bwrap import BwrapSandbox
from gsv_core.node.sandbox.none import NoSandbox
from gsv_core.node.sandbox.seatbelt import EXECUTABLE
from gsv_core.node.sandbox.seatbelt import SeatbeltSandbox

AUTO, BWRAP, SEATBELT, OFF = MODES = SANDBOX_MODES
INSTALL_BWRAP = (
    "install bubblewrap (Debian/Ubuntu: sudo apt install bubblewrap; Fedora: sudo dnf "
    "install bubblewrap; Arch: sudo pacman -S bubblewrap) and restart the node"
)
PROBE_SECONDS = 10


def choose_sandbox(mode: str, policy: SandboxPolicy, system: str | None = None) -> Sandbox:
    """The sandbox for `mode` on this machine (`system`: "linux", "darwin", ...)."""
    if mode not in MODES:
        raise SandboxUnavailable(f"node.sandbox must be one of {', '.join(MODES)}, not {mode!r}")
    if mode == OFF:
        return NoSandbox("turned off (node.sandbox = off)")
    system = (system or platform.system()).lower()
    if mode == SEATBELT or (mode == AUTO and system == "darwin"):
        return _seatbelt(policy, required=mode == SEATBELT)
    if mode == BWRAP or (mode == AUTO and system == "linux"):
        return _bwrap(policy, required=mode == BWRAP)
    return NoSandbox(f"no sandbox backend for {system}: node commands run unconfined")


def _seatbelt(policy: SandboxPolicy, required: bool) -> Sandbox:
    if os.access(EXECUTABLE, os.X_OK):
        return SeatbeltSandbox(policy)
    return _missing(f"{EXECUTABLE} is missing", "Seatbelt comes with macOS", required)


def _bwrap(policy: SandboxPolicy, required: bool) -> Sandbox:
    executable = shutil.which("bwrap")
    if executable is None:
        return _missing("bubblewrap (bwrap) is not installed", INSTALL_BWRAP, required)
    problem = probe_bwrap(executable)
    if problem is not None:
        fix = ("allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, "
               "or on Ubuntu 24.04+ an AppArmor profile for bwrap), or run the node outside "
               "the container that forbids them")  # fmt: skip
        return _missing(f"bubblewrap cannot start here: {problem}", fix, required)
    return BwrapSandbox(executable, policy)


def probe_bwrap(executable: str) -> str | None:
    """Why bubblewrap cannot make the sandbox on this machine, or None when it can."""
    argv = [executable, "--die-with-parent", "--unshare-pid", "--ro-bind", "/", "/",
            "--dev", "/dev", "--proc", "/proc", "--", "true"]  # fmt: skip
    try:
        done = subprocess.run(argv, capture_output=True, timeout=PROBE_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else f"exit status {done.returncode}"
    return None


def _missing(what: str, fix: str, required: bool) -> Sandbox:
    if required:
        raise SandboxUnavailable(f"{what}: {fix}")
    return NoSandbox(f"{what}: node commands run unconfined; {fix}")
