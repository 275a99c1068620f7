"""The other end of a socket, read from websockets' `remote_address` (a `(host, port)`
tuple over TCP, four items over IPv6; empty or None when the socket has no address).

Read here alone: the websocket connection (`Connection.host` and `.remote`) and the web
sign-in (`WebFront`) both count wrong codes by host, so both must take it the same way.
"""

from __future__ import annotations

UNKNOWN = "unknown"


def host_of(address: object) -> str:
    """The host without its port: what wrong join and sign-in codes are counted by."""
    return str(address[0]) if isinstance(address, tuple) and address else UNKNOWN


def describe(address: object) -> str:
    """`host:port`, for logs."""
    if isinstance(address, tuple) and len(address) >= 2:
        return f"{address[0]}:{address[1]}"
    return str(address) if address else UNKNOWN
