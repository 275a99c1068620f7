"""No sandbox: commands run as the node's user, with what the gate lets through only.
Chosen by `node.sandbox = off`, or by `auto` where no backend works (Windows, a kernel
without user namespaces); `reason` says which, and how to get one."""

from __future__ import annotations

from typing import Any

from gsv_core.node.sandbox.base import SandboxPolicy


class NoSandbox:
    name = "none"
    active = False
    policy: SandboxPolicy | None = None

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def wrap(self, argv: list[str], workdir: str) -> list[str]:
        return argv

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "network": True, "reason": self.reason}
