"""macOS: `sandbox-exec` with a Seatbelt profile generated from the policy.

The same meaning as bwrap.py in Seatbelt's terms: everything denied that the profile
does not allow; the file system readable but for the hidden paths (gsv's files and the
credential stores, unreadable rather than empty); writable only in the workspace (less
its `.git`), the owner's extra paths and the temporary directories; no network unless
the policy allows it; signals and process information only within the sandbox, and no
other process's arguments or environment (`kern.procargs*`). Unlike bwrap, /tmp is the
machine's own (macOS has no private mount), so a confined command can read what other
programs left there. Later rules win over earlier ones in a Seatbelt profile, which is
what lets a deny narrow an allow.
"""

from __future__ import annotations

import os
from typing import Any

from gsv_core.node.sandbox.base import SandboxPolicy
from gsv_core.node.sandbox.bwrap import READ_ONLY_IN_WORKSPACE

EXECUTABLE = "/usr/bin/sandbox-exec"
BASE = """(version 1)
(deny default)
(allow process-exec process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
(allow sysctl-read)
(deny sysctl-read (sysctl-name "kern.procargs") (sysctl-name "kern.procargs2"))
(allow user-preference-read)
(allow ipc-posix-sem ipc-posix-shm)
(allow pseudo-tty)
(allow file-ioctl)
(allow mach-lookup
  (global-name "com.apple.system.opendirectoryd.libinfo")
  (global-name "com.apple.system.notification_center")
  (global-name "com.apple.PowerManagement.control"))
(allow file-read*)
(allow file-write-data (literal "/dev/null") (literal "/dev/zero") (literal "/dev/dtracehelper"))
(allow file-write* (regex #"^/dev/ttys[0-9]+$") (literal "/dev/ptmx") (literal "/dev/tty"))
"""
NETWORK = """(allow network* system-socket)
(allow mach-lookup
  (global-name "com.apple.SystemConfiguration.DNSConfiguration")
  (global-name "com.apple.SystemConfiguration.configd")
  (global-name "com.apple.networkd")
  (global-name "com.apple.trustd.agent")
  (global-name "com.apple.ocspd")
  (global-name "com.apple.SecurityServer"))
"""


class SeatbeltSandbox:
    name = "seatbelt"
    active = True

    def __init__(self, policy: SandboxPolicy, executable: str = EXECUTABLE) -> None:
        self.executable = executable
        self.policy = policy
        self.profile = profile(policy)

    def wrap(self, argv: list[str], workdir: str) -> list[str]:
        # sandbox-exec runs argv in the caller's directory: the node starts it in workdir
        return [self.executable, "-p", self.profile, "--", *argv]

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "network": self.policy.network}


def profile(policy: SandboxPolicy) -> str:
    """The Seatbelt profile for `policy`."""
    workspace = os.path.realpath(policy.workspace)
    writable = [workspace, *map(os.path.realpath, policy.writable), *_temporary()]
    lines = [BASE, f"(allow file-write* {_subpaths(writable)})"]
    protected = [os.path.join(workspace, name) for name in READ_ONLY_IN_WORKSPACE]
    lines.append(f"(deny file-write* {_subpaths(protected)})")
    if policy.hidden:
        lines.append(f"(deny file-read* file-write* {_subpaths(policy.hidden)})")
    if policy.network:
        lines.append(NETWORK)
    return "\n".join(lines) + "\n"


def _temporary() -> list[str]:
    found = ["/private/tmp"]
    tmpdir = os.environ.get("TMPDIR")
    if tmpdir:
        found.append(os.path.realpath(tmpdir))
    return found


def _subpaths(paths: list[str] | tuple[str, ...]) -> str:
    return " ".join(f"(subpath {_quoted(p)})" for p in dict.fromkeys(paths))


def _quoted(path: str) -> str:
    """A Seatbelt string literal: backslashes and quotes escaped, so a path cannot end the
    string and add a rule of its own."""
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'
