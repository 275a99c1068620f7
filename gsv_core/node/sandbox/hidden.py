"""What a confined command must not see: gsv's own directories (its secret store, config,
database with every conversation, logs) and the places where the owner's other
credentials usually live. Hidden means empty: a directory is covered by an empty tmpfs, a
file by /dev/null (bwrap), or unreadable (Seatbelt). The list is every candidate: the
backend hides those that exist when a command starts, so a store made later is hidden
too."""

from __future__ import annotations

import os
from collections.abc import Iterable

from gsv_core.approval.credentials import HOME_CREDENTIALS
from gsv_core.approval.credentials import MACOS_CREDENTIALS
from gsv_core.paths import GsvPaths

# sockets of services that act outside the sandbox for whoever connects: the session
# bus (`systemd-run --user` runs anything), ssh and gpg agents, the container engines
# (root on the host). A read-only mount does not stop a connect() to a socket.
LINUX_SOCKETS = ("/run/user", "/run/dbus", "/run/docker.sock", "/var/run/docker.sock",
                 "/run/containerd", "/run/podman", "/run/snapd.socket",
                 "/run/snapd-snap.socket")  # fmt: skip


def hidden_paths(
    paths: GsvPaths, home: str, system: str, extra: Iterable[str] = ()
) -> tuple[str, ...]:
    """The paths to hide on `system` ("linux", "macos"), absolute and resolved as far as
    they exist (a link is hidden where it leads), without repeats, in a stable order."""
    gsv = (paths.config_dir, paths.data_dir, paths.log_dir, paths.run_dir)
    listed = [*map(str, gsv), *(os.path.join(home, p) for p in HOME_CREDENTIALS)]
    if system == "macos":
        listed += [os.path.join(home, p) for p in MACOS_CREDENTIALS]
    elif system == "linux":
        listed += LINUX_SOCKETS
    listed += [os.path.expanduser(p) for p in extra]
    return tuple(dict.fromkeys(os.path.realpath(p) for p in listed))
