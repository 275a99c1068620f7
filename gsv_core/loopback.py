"""Whether a host name or address stands for this machine: the gateway refuses to listen
elsewhere without TLS, and a provider at such an address needs no API key.

Standard library only.
"""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """`localhost` or a loopback address (127.0.0.0/8, ::1); a name is not resolved."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
