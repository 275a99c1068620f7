"""What a confined command that failed is told when its output shows the sandbox stopped
it (no network, a read-only file system), with what would let it run: the Bash
`unsandboxed` argument, which asks the owner, or the node setting the owner can change.
The model reads this; without it a sandboxed `npm install` looks like a broken network."""

from __future__ import annotations

import re

from gsv_core.node.sandbox.base import SandboxPolicy

# the messages programs print when a connection or a name lookup cannot be made (the
# sandbox's network namespace has a loopback of its own, where nothing listens: a
# connection to 127.0.0.1 is refused)
NETWORK_SIGNS = re.compile(
    r"network is unreachable|temporary failure in name resolution|could not resolve host"
    r"|name or service not known|nodename nor servname|getaddrinfo|enetunreach|eai_again"
    r"|failed to establish a new connection|no address associated with hostname"
    r"|could not resolve|network unreachable|unable to resolve host|connection refused"
    r"|couldn't connect to server|failed to connect to",
    re.IGNORECASE,
)
# the messages of a write the file system refused (bwrap: EROFS; Seatbelt: EPERM)
WRITE_SIGNS = re.compile(r"read-only file system|erofs|operation not permitted", re.IGNORECASE)
TAIL_CHARS = 20_000  # the messages are at the end


def sandbox_note(output: str, policy: SandboxPolicy) -> str | None:
    """The note for a failed confined command, or None when nothing points at the sandbox."""
    tail = output[-TAIL_CHARS:]
    causes = []
    if not policy.network and NETWORK_SIGNS.search(tail):
        causes.append("no network (node.sandboxNetwork is off)")
    if WRITE_SIGNS.search(tail):
        causes.append(f"nothing outside the workspace {policy.workspace} and /tmp is writable")
    if not causes:
        return None
    return (
        f"This command ran in the node's sandbox: {' and '.join(causes)}. To run it "
        "outside the sandbox, call Bash again with the same command and "
        '"unsandboxed": true (the owner is asked first). The owner can also allow it for '
        "every sandboxed command on this node: gsv local-config set node.sandboxNetwork "
        "true, or node.sandboxWritable DIR, then restart the node."
    )
