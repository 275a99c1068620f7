"""Reading a node's `nodeRuntime.sandbox` (`{backend, network, reason?}`, docs/sandbox.md)
for people: the words `gsv status`, `gsv nodes list`, `gsv doctor` and the security
audit use, and the fix for a node whose commands are not sandboxed. Standard library
only: the CLI reads it from plain JSON."""

from __future__ import annotations

from typing import Any

NONE = "none"
# said under an approval of a sandboxed node's command (`leavesSandbox`)
LEAVES_SANDBOX = (
    "Approved, it runs outside the node's sandbox: with the network, and writing beyond "
    "the workspace."
)
INSTALL_HINT = (
    "on that machine: install bubblewrap (Debian/Ubuntu: sudo apt install bubblewrap), "
    "then restart the node"
)


def is_sandboxed(sandbox: dict[str, Any] | None) -> bool:
    return isinstance(sandbox, dict) and sandbox.get("backend", NONE) != NONE


def sandbox_words(sandbox: dict[str, Any] | None) -> str:
    """`bwrap, no network`, `NOT SANDBOXED`, or `unknown` for a node that does not say."""
    if not isinstance(sandbox, dict):
        return "sandbox unknown (a node older than sandboxes)"
    if not is_sandboxed(sandbox):
        return "NOT SANDBOXED"
    network = "with network" if sandbox.get("network") else "no network"
    return f"{sandbox.get('backend')}, {network}"


def unsandboxed_problem(node_id: str, sandbox: dict[str, Any] | None) -> str | None:
    """Why `node_id`'s commands run unconfined, or None when they do not."""
    if is_sandboxed(sandbox):
        return None
    reason = sandbox.get("reason") if isinstance(sandbox, dict) else None
    why = reason or "the node is older than sandboxes: update gsv there"
    return f"node {node_id}'s commands are not sandboxed: {why}"


def unsandboxed_fix(sandbox: dict[str, Any] | None) -> str:
    """The step that gives the node a sandbox."""
    reason = str(sandbox.get("reason") or "") if isinstance(sandbox, dict) else ""
    if "node.sandbox = off" in reason:
        return (
            "on that machine: gsv node --sandbox auto (or gsv local-config set node.sandbox auto)"
        )
    if not isinstance(sandbox, dict):
        return "on that machine: pip install -U gsv, then restart the node"
    return INSTALL_HINT
