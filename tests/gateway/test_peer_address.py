"""The peer's host and its log form come from websockets' remote_address in one place."""

from __future__ import annotations

import pytest

from gsv_core.gateway.peer_address import describe
from gsv_core.gateway.peer_address import host_of


@pytest.mark.parametrize(
    ("address", "host", "described"),
    [
        (("203.0.113.9", 51234), "203.0.113.9", "203.0.113.9:51234"),
        (("::1", 51234, 0, 0), "::1", "::1:51234"),
        (None, "unknown", "unknown"),
        ((), "unknown", "unknown"),
    ],
)
def test_the_host_is_the_address_without_its_port(
    address: object, host: str, described: str
) -> None:
    """IPv4 and IPv6 alike: the host counts wrong codes; host:port goes to the log."""
    assert host_of(address) == host
    assert describe(address) == described
