"""The web fetch guard against hostile URLs: every spelling of a non-public address is
refused, names are judged by every address they resolve to (a resolver stub stands in
for DNS), and only http(s) without credentials is fetched."""

from __future__ import annotations

import ipaddress

import pytest

from gsv_core.errors import InvalidParams
from gsv_core.errors import ToolFailed
from gsv_core.webfetch.guard import check_url
from gsv_core.webfetch.guard import parse_networks

DNS = {
    "metadata.test": ["169.254.169.254"],
    "rebind.test": ["93.184.216.34", "127.0.0.1"],  # one bad answer refuses the name
    "v6local.test": ["::1"],
    "ula.test": ["fd00:ec2::254"],
    "cgnat.test": ["100.100.1.1"],
    "public.test": ["93.184.216.34"],
    "public6.test": ["2606:2800:220:1:248:1893:25c8:1946"],
    "private.test": ["192.168.1.10"],
}


async def stub(host: str, port: int) -> list[str]:
    if host not in DNS:
        raise OSError("Name or service not known")
    return DNS[host]


HOSTILE = [
    "http://127.0.0.1/",
    "http://127.1/",
    "http://2130706433/",  # 127.0.0.1 as one decimal number
    "http://0x7f000001/",
    "http://0177.0.0.1/",  # octal
    "http://0x7f.1/",
    "http://0/",
    "http://0.0.0.0/",
    "http://localhost.localdomain.invalid/",  # does not resolve
    "http://[::1]/",
    "http://[::]/",
    "http://[::ffff:127.0.0.1]/",  # IPv4-mapped
    "http://[::ffff:7f00:1]/",
    "http://[::127.0.0.1]/",  # IPv4-compatible
    "http://[2002:7f00:1::]/",  # 6to4 of 127.0.0.1
    "http://[64:ff9b::a9fe:a9fe]/",  # NAT64 of 169.254.169.254
    "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",  # Teredo, client 127.0.0.1
    "http://[fe80::1]/",
    "http://[fd00::1]/",
    "http://169.254.169.254/latest/meta-data/",
    "http://metadata.test/",
    "http://10.0.0.1/",
    "http://172.16.0.1/",
    "http://192.168.0.1/",
    "http://100.64.0.1/",  # CGNAT
    "http://224.0.0.1/",  # multicast
    "http://[ff02::1]/",
    "http://240.0.0.1/",  # reserved
    "http://255.255.255.255/",
    "http://192.0.2.1/",  # documentation range: not public
    "http://rebind.test/",
    "http://v6local.test/",
    "http://ula.test/",
    "http://cgnat.test/",
    "http://private.test:8080/",
    "https://10.1.2.3:443/",
    "file:///etc/passwd",
    "gopher://public.test/",
    "ftp://public.test/",
    "http://user:pass@public.test/",
    "http://:80/",
    "http://public.test:99999/",
    "javascript:alert(1)",
]


@pytest.mark.parametrize("url", HOSTILE)
async def test_hostile_urls_are_refused(url: str) -> None:
    with pytest.raises(ToolFailed):
        await check_url(url, stub, [])


def test_the_table_is_big_enough() -> None:
    assert len(HOSTILE) >= 30


@pytest.mark.parametrize(
    ("url", "address"),
    [
        ("http://public.test/a?b=c", "93.184.216.34"),
        ("https://public6.test/", "2606:2800:220:1:248:1893:25c8:1946"),
        ("http://93.184.216.34:8080/", "93.184.216.34"),
        ("HTTPS://PUBLIC.TEST/", "93.184.216.34"),
    ],
)
async def test_public_addresses_pass_and_are_pinned(url: str, address: str) -> None:
    target = await check_url(url, stub, [])
    assert target.addresses == (ipaddress.ip_address(address),)


async def test_allow_private_opens_exactly_its_networks() -> None:
    allow = parse_networks(["192.168.1.0/24", "127.0.0.1"])
    assert (await check_url("http://private.test/", stub, allow)).port == 80
    assert str((await check_url("http://127.0.0.1:9/", stub, allow)).addresses[0]) == "127.0.0.1"
    with pytest.raises(ToolFailed, match="loopback"):
        await check_url("http://127.0.0.2/", stub, allow)
    with pytest.raises(ToolFailed, match="link-local"):
        await check_url("http://metadata.test/", stub, allow)


def test_bad_allow_entries_are_named() -> None:
    with pytest.raises(InvalidParams, match="not-a-net"):
        parse_networks(["not-a-net"])
