"""Which addresses a web fetch may contact: public unicast only.

A URL is checked by what its host *resolves to*, never by how it is spelled: an IPv4
literal in any form the C library accepts (`2130706433`, `0177.0.0.1`, `0x7f.1`,
`127.1`) is read with `socket.inet_aton`, as connect() would; a name is resolved once and
every address it resolves to must be allowed (one bad address refuses it), and the
fetch then connects only to those checked addresses, so a DNS answer that changes in
between (rebinding) cannot redirect it. IPv6 forms that carry an IPv4 address (mapped,
compatible, 6to4, Teredo, NAT64) are judged by that address too.

Refused: loopback, private, link-local (cloud metadata at 169.254.169.254 and
fd00:ec2::254 among them), CGNAT (100.64.0.0/10), multicast, reserved, unspecified and
anything else not globally routable, unless a network of config
`webFetch.allowPrivate` contains it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from gsv_core.errors import InvalidParams
from gsv_core.errors import ToolFailed

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
# host, port -> the addresses it resolves to (tests pass a stub)
Resolver = Callable[[str, int], Awaitable[list[str]]]

SCHEMES = {"http": 80, "https": 443}
CGNAT = ipaddress.IPv4Network("100.64.0.0/10")
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
COMPATIBLE = ipaddress.IPv6Network("::/96")  # deprecated IPv4-compatible ::a.b.c.d


@dataclass(frozen=True)
class Target:
    """A URL the guard passed: where to connect, and what to ask for there."""

    url: str
    scheme: str
    host: str  # as written (the Host header and the TLS server name)
    port: int
    # the checked addresses, in the resolver's order: the connection goes to the first
    # that accepts it (a host's IPv6 address may be unreachable from here)
    addresses: tuple[IPAddress, ...]


def parse_networks(entries: Iterable[str]) -> list[Network]:
    """`webFetch.allowPrivate` entries as networks (a bare address is a /32 or /128)."""
    try:
        return [ipaddress.ip_network(entry, strict=False) for entry in entries]
    except ValueError as exc:
        raise InvalidParams(f"webFetch.allowPrivate: {exc}") from None


async def system_resolver(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


async def check_url(url: str, resolver: Resolver, allow: list[Network]) -> Target:
    """The Target for `url`, or ToolFailed saying why it may not be fetched."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise ToolFailed(f"only http and https URLs can be fetched, not {scheme or 'this'!r}")
    if parts.username is not None or parts.password is not None:
        raise ToolFailed("URLs with a user name or password are not fetched")
    host = parts.hostname
    if not host:
        raise ToolFailed(f"no host in {url!r}")
    try:
        port = parts.port or SCHEMES[scheme]
    except ValueError:
        raise ToolFailed(f"bad port in {url!r}") from None
    addresses = literal(host)
    if addresses is None:
        addresses = await _resolve(host, port, resolver)
    for address in addresses:
        reason = blocked(address, allow)
        if reason is not None:
            raise ToolFailed(f"{host} is {reason} ({address}): not fetched")
    return Target(url.strip(), scheme, host, port, tuple(dict.fromkeys(addresses)))


def literal(host: str) -> list[IPAddress] | None:
    """The address an IP literal host stands for (legacy IPv4 spellings included)."""
    try:
        return [ipaddress.IPv6Address(host.split("%", 1)[0])]
    except ValueError:
        pass
    try:
        return [ipaddress.IPv4Address(socket.inet_aton(host))]
    except OSError:
        return None


async def _resolve(host: str, port: int, resolver: Resolver) -> list[IPAddress]:
    try:
        found = await resolver(host, port)
    except OSError as exc:
        raise ToolFailed(f"cannot resolve {host}: {exc}") from None
    addresses = [ipaddress.ip_address(a.split("%", 1)[0]) for a in found]
    if not addresses:
        raise ToolFailed(f"{host} resolves to no address")
    return addresses


def blocked(address: IPAddress, allow: list[Network]) -> str | None:
    """Why `address` may not be contacted, or None."""
    if any(address.version == net.version and address in net for net in allow):
        return None
    for inner in _embedded(address):
        reason = blocked(inner, allow)
        if reason is not None:
            return f"{reason} inside an IPv6 address"
    return _kind(address)


def _kind(address: IPAddress) -> str | None:
    checks = (
        (address.is_loopback, "a loopback address"),
        (address.is_unspecified, "the unspecified address"),
        (address.is_link_local, "a link-local address (cloud metadata lives there)"),
        (address.is_multicast, "a multicast address"),
        (isinstance(address, ipaddress.IPv4Address) and address in CGNAT, "a CGNAT address"),
        (address.is_private, "a private address"),
        (address.is_reserved, "a reserved address"),
        (not address.is_global, "not a public address"),
    )
    return next((reason for hit, reason in checks if hit), None)


def _embedded(address: IPAddress) -> list[ipaddress.IPv4Address]:
    if not isinstance(address, ipaddress.IPv6Address):
        return []
    found = [address.ipv4_mapped, address.sixtofour]
    if address.teredo:
        found += list(address.teredo)
    if address in NAT64 or (address in COMPATIBLE and int(address) > 1):
        found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return [inner for inner in found if inner is not None]
