"""gsv__WebFetch decodes gzip and deflate bodies in bounded steps: a small compressed body
that expands a thousandfold (a "zip bomb") costs about the size cap, not the expansion;
other encodings are refused by name. Against a local HTTP server on 127.0.0.1."""

from __future__ import annotations

import contextlib
import tracemalloc
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from gsv_core.errors import ToolFailed
from gsv_core.webfetch.fetch import Request
from gsv_core.webfetch.fetch import fetch
from gsv_core.webfetch.guard import parse_networks
from gsv_core.webfetch.guard import system_resolver
from tests.webfetch.test_fetch import serve_site

LOCAL = parse_networks(["127.0.0.1/32"])
CAP = 1_000_000
EXPANDED = 200 * 1024 * 1024  # what the bomb becomes: 200 MiB of zeros
TEXT = b"hello, compressed world\n" * 1000


def compressed(data_chunks: Iterator[bytes], wbits: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    return b"".join(packer.compress(chunk) for chunk in data_chunks) + packer.flush()


def zeros() -> Iterator[bytes]:
    block = b"\0" * (1024 * 1024)
    for _ in range(EXPANDED // len(block)):
        yield block


BODIES: dict[str, tuple[str, bytes]] = {}


def bodies() -> dict[str, tuple[str, bytes]]:
    """path -> (Content-Encoding, body), built once (compressing 200 MiB takes a moment)."""
    if not BODIES:
        BODIES.update(
            {
                "/gzip-bomb": ("gzip", compressed(zeros(), 31)),
                "/deflate-bomb": ("deflate", compressed(zeros(), 15)),
                "/raw-deflate-bomb": ("deflate", compressed(zeros(), -15)),
                "/gzip-text": ("gzip", compressed(iter([TEXT]), 31)),
                "/deflate-text": ("deflate", compressed(iter([TEXT]), 15)),
                "/brotli": ("br", b"\x8b\x03\x80hello\x03"),
                "/broken-gzip": ("gzip", b"\x1f\x8b\x08\x00garbage-not-deflate"),
                "/broken-deflate": ("deflate", b"\xff\xffnot deflate at all"),
            }
        )
    return BODIES


class Site(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        encoding, body = bodies()[self.path]
        self.send_response(200)
        self.send_header("content-type", "text/plain")
        self.send_header("content-encoding", encoding)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body)  # the client may stop reading at its cap


@pytest.fixture
def site() -> Iterator[str]:
    bodies()
    yield from serve_site(Site)


async def get(url: str) -> Any:
    return await fetch(Request(url), system_resolver, LOCAL, CAP, 20)


@pytest.mark.parametrize("path", ["/gzip-bomb", "/deflate-bomb", "/raw-deflate-bomb"])
async def test_a_compression_bomb_is_cut_at_the_cap_in_bounded_memory(site: str, path: str) -> None:
    """200 MiB of zeros sent compressed: the body is the first CAP bytes, and the fetch
    never holds more than a few times the cap."""
    tracemalloc.start()
    try:
        fetched = await get(site + path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (len(fetched.body), fetched.truncated) == (CAP, True)
    assert fetched.body == b"\0" * CAP
    assert peak < 4 * CAP, f"peak {peak / 1e6:.1f} MB for a {CAP / 1e6:.0f} MB cap"


@pytest.mark.parametrize("path", ["/gzip-text", "/deflate-text"])
async def test_compressed_text_is_decoded_whole(site: str, path: str) -> None:
    """A gzip or deflate body under the cap comes back decoded and not truncated."""
    fetched = await get(site + path)
    assert (fetched.body, fetched.truncated) == (TEXT, False)


async def test_an_encoding_that_cannot_be_bounded_is_refused(site: str) -> None:
    """A Content-Encoding other than gzip or deflate is refused by name."""
    with pytest.raises(ToolFailed, match="Content-Encoding 'br'"):
        await get(site + "/brotli")


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
async def test_a_broken_compressed_body_is_a_clear_error(site: str, encoding: str) -> None:
    """A body that is not the encoding it claims fails with a message, not a traceback."""
    with pytest.raises(ToolFailed, match=f"the body is not valid {encoding}"):
        await get(f"{site}/broken-{encoding}")
