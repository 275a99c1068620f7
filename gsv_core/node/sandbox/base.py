"""What a sandbox is: a way to wrap a command's argv so that it runs confined by a
SandboxPolicy, and a description of itself for the gateway (`nodeRuntime.sandbox`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from typing import Protocol

from gsv_core.errors import Unavailable


@dataclass(frozen=True)
class SandboxPolicy:
    """What a confined command may reach. Paths are absolute."""

    workspace: str
    # more directories or files it may write (`node.sandboxWritable`)
    writable: tuple[str, ...] = ()
    # what it must not see: gsv's files and the credential stores (hidden.py), plus the
    # owner's own (`node.sandboxHidden`)
    hidden: tuple[str, ...] = ()
    # the network (`node.sandboxNetwork`); off: not even the machine's loopback
    network: bool = False


class Sandbox(Protocol):
    """One backend. `active` is False only for the no-sandbox backend, whose `policy`
    is None."""

    @property
    def name(self) -> str: ...

    @property
    def active(self) -> bool: ...

    @property
    def policy(self) -> SandboxPolicy | None: ...

    def wrap(self, argv: list[str], workdir: str) -> list[str]:
        """The argv that runs `argv` in `workdir` inside the sandbox."""
        ...

    def describe(self) -> dict[str, Any]:
        """`nodeRuntime.sandbox`: `{backend, network}`, or `{backend: "none", reason}`."""
        ...


class SandboxUnavailable(Unavailable):
    """The owner asked for a backend this machine cannot run (`node.sandbox = bwrap`
    without bubblewrap): the node refuses to start rather than run commands unconfined."""

    default_retryable = False
