"""Linux: bubblewrap (`bwrap`, unprivileged through user namespaces, about 8 ms a launch).

The command gets a new PID namespace with its own /proc (no other process of the machine
is visible, so no other process's environment or open files), the whole file system
read-only, the workspace and the owner's extra paths read-write, a private /tmp, gsv's
own files and the credential stores hidden, and no network unless the policy allows it
(`--unshare-net` also takes away the machine's loopback: no gateway port, no local
database server). bwrap always sets no-new-privileges: a setuid program inside gains
nothing. `--die-with-parent` ends it with the node.

The node's kill of the command's process group (timeout, Process kill, tool.cancel)
reaches bwrap and the command alike; a process inside that left the group (`setsid`)
dies with the namespace once its first process is gone. A repository's `.git` in the
workspace stays read-only: its config and hooks decide what git runs later, outside the
sandbox, when the owner approves a commit.
"""

from __future__ import annotations

import os
from typing import Any

from gsv_core.node.sandbox.base import SandboxPolicy

# read-write in the workspace but for these, which decide what runs later unsandboxed
READ_ONLY_IN_WORKSPACE = (".git",)


class BwrapSandbox:
    name = "bwrap"
    active = True

    def __init__(self, executable: str, policy: SandboxPolicy) -> None:
        self.executable = executable
        self.policy = policy

    def wrap(self, argv: list[str], workdir: str) -> list[str]:
        # built per command: a repository, a credential store made since the last one
        # is covered too (a few dozen lstat calls)
        return [*self._prefix(), "--chdir", workdir, "--", *argv]

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "network": self.policy.network}

    def _prefix(self) -> list[str]:
        policy = self.policy
        prefix = [self.executable, "--die-with-parent", "--unshare-pid", "--unshare-ipc",
                  "--unshare-uts", "--unshare-cgroup-try"]  # fmt: skip
        if not policy.network:
            prefix.append("--unshare-net")
        prefix += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        for _, mount in sorted(self._mounts(), key=lambda item: item[0]):
            prefix += mount
        return prefix

    def _mounts(self) -> list[tuple[tuple[int, int], list[str]]]:
        """(order, bwrap arguments) for every mount over the read-only root: parents
        before children, so the deepest mount decides (a hidden directory inside the
        workspace stays hidden; a workspace inside /tmp stays writable)."""
        mounts: list[tuple[tuple[int, int], list[str]]] = []

        def add(path: str, kind: int, args: list[str]) -> None:
            mounts.append(((path.rstrip("/").count("/"), kind), args))

        add("/tmp", 0, ["--tmpfs", "/tmp"])
        workspace = os.path.realpath(self.policy.workspace)
        for path in (workspace, *map(os.path.realpath, self.policy.writable)):
            if os.path.exists(path):
                add(path, 1, ["--bind", path, path])
        for name in READ_ONLY_IN_WORKSPACE:
            inside = os.path.join(workspace, name)
            if os.path.exists(inside):
                add(inside, 2, ["--ro-bind", inside, inside])
        for path in self.policy.hidden:
            if os.path.isdir(path):
                add(path, 3, ["--tmpfs", path])
            elif os.path.lexists(path):
                add(path, 3, ["--ro-bind", "/dev/null", path])
        return mounts
