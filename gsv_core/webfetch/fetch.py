"""One guarded HTTP exchange: connect only to the addresses the guard checked, each in
turn until one accepts the connection (the URL's host stays the Host header and the TLS
server name, through httpx's documented `sni_hostname` extension), follow redirects by
hand so that every hop is checked again,
and stop reading at a size cap and a deadline. No proxies from the environment (a proxy
would connect somewhere the guard never saw), no cookies kept.
A compressed body is decoded here, from the raw bytes, never producing more than the cap
allows (`_Decoder`): httpx would inflate each 64 KiB it reads in one go, which a body of
zeros turns into 64 MiB before any cap is checked. So only gzip and deflate are asked
for, and a body in any other Content-Encoding is refused.
"""

from __future__ import annotations

import asyncio
import zlib
from dataclasses import dataclass
from urllib.parse import urljoin
from urllib.parse import urlsplit

import httpx

from gsv_core.errors import TimedOut
from gsv_core.errors import ToolFailed
from gsv_core.webfetch.guard import Network
from gsv_core.webfetch.guard import Resolver
from gsv_core.webfetch.guard import Target
from gsv_core.webfetch.guard import check_url

MAX_REDIRECTS = 5
REDIRECTS = {301, 302, 303, 307, 308}
# headers the caller may not set: the guard decides where the request goes and how long
# it is; the rest are the connection's business
FORBIDDEN_HEADERS = {"host", "content-length", "transfer-encoding", "connection", "upgrade"}
USER_AGENT = "gsv-webfetch/1 (+https://github.com/gsv)"
# the encodings `_Decoder` can inflate in bounded steps
ACCEPT_ENCODING = "gzip, deflate"


@dataclass(frozen=True)
class Request:
    url: str
    method: str = "GET"
    headers: dict[str, str] | None = None
    body: str | None = None


@dataclass(frozen=True)
class Fetched:
    url: str  # after redirects
    status: int
    content_type: str
    charset: str | None
    body: bytes
    truncated: bool  # the body was longer than the cap


async def fetch(
    request: Request, resolver: Resolver, allow: list[Network], max_bytes: int, timeout: float
) -> Fetched:
    headers = _headers(request.headers or {})
    method, body, url = request.method.upper(), request.body, request.url
    try:
        async with asyncio.timeout(timeout), httpx.AsyncClient(trust_env=False) as client:
            for _ in range(MAX_REDIRECTS + 1):
                target = await check_url(url, resolver, allow)
                fetched, location = await _exchange(client, target, method, headers, body,
                                                    max_bytes)  # fmt: skip
                if location is None:
                    return fetched
                url = urljoin(target.url, location)
                headers = _for_next_hop(headers, target, url)
                if fetched.status == 303 or (fetched.status in (301, 302) and method == "POST"):
                    method, body = "GET", None  # what browsers do
    except TimeoutError:
        raise TimedOut(f"{request.url} did not answer within {timeout:g}s") from None
    except httpx.HTTPError as exc:
        raise ToolFailed(f"fetching {url} failed: {type(exc).__name__}: {exc}") from None
    raise ToolFailed(f"more than {MAX_REDIRECTS} redirects from {request.url}")


# what a browser or httpx never sends on to another origin after a redirect
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})


def _for_next_hop(headers: dict[str, str], target: Target, url: str) -> dict[str, str]:
    """The headers for a redirect to `url`: credentials stay with their own origin."""
    parts = urlsplit(url)
    default = 443 if parts.scheme == "https" else 80
    same = (parts.scheme, (parts.hostname or "").lower(), parts.port or default) == (
        target.scheme, target.host.lower(), target.port
    )  # fmt: skip
    return (
        headers
        if same
        else {k: v for k, v in headers.items() if k.lower() not in CREDENTIAL_HEADERS}
    )


def _headers(given: dict[str, str]) -> dict[str, str]:
    bad = [name for name in given if name.lower() in FORBIDDEN_HEADERS]
    if bad:
        raise ToolFailed(f"header {bad[0]!r} cannot be set")
    return {"user-agent": USER_AGENT, "accept-encoding": ACCEPT_ENCODING, **given}


async def _exchange(
    client: httpx.AsyncClient,
    target: Target,
    method: str,
    headers: dict[str, str],
    body: str | None,
    max_bytes: int,
) -> tuple[Fetched, str | None]:
    """One request to a checked address; (what came back, a redirect's Location)."""
    extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
    for tried, address in enumerate(target.addresses, 1):
        pinned = httpx.URL(target.url).copy_with(host=str(address))
        request = client.build_request(method, pinned, headers={**headers, "host": _host(target)},
                                       content=body, extensions=extensions)  # fmt: skip
        try:
            response = await client.send(request, stream=True)
            break
        except (httpx.ConnectError, httpx.ConnectTimeout):
            if tried == len(target.addresses):
                raise
            # no connection, so nothing was sent: the next address may take it
    try:
        location = response.headers.get("location")
        if response.status_code in REDIRECTS and location:
            return _fetched(target, response, b"", False), location
        data, truncated = await _read(response, max_bytes)
        return _fetched(target, response, data, truncated), None
    finally:
        await response.aclose()


def _host(target: Target) -> str:
    host = f"[{target.host}]" if ":" in target.host else target.host
    default = {"http": 80, "https": 443}[target.scheme]
    return host if target.port == default else f"{host}:{target.port}"


async def _read(response: httpx.Response, max_bytes: int) -> tuple[bytes, bool]:
    """The decoded body, at most `max_bytes` of it, and whether there was more."""
    decoder = _Decoder(response.headers.get("content-encoding", ""))
    chunks: list[bytes] = []
    size = 0
    async for raw in response.aiter_raw():
        chunk = decoder.decode(raw, max_bytes + 1 - size)
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            return b"".join(chunks)[:max_bytes], True
    return b"".join(chunks), False


class _Decoder:
    """Undoes a Content-Encoding of identity, gzip or deflate (with or without the zlib
    header, as httpx accepts), one raw chunk at a time and at most `limit` bytes a call."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding.strip().lower()
        if self.encoding in ("", "identity"):
            self.inflate = None
        elif self.encoding in ("gzip", "x-gzip"):
            self.inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif self.encoding == "deflate":
            self.inflate = zlib.decompressobj(zlib.MAX_WBITS)
        else:
            raise ToolFailed(f"the body's Content-Encoding {encoding!r} is not supported")
        self.started = self.headerless = False

    def decode(self, raw: bytes, limit: int) -> bytes:
        """At most `limit` bytes decoded from `raw`; once the limit is reached the rest of
        the input is dropped (the caller stops there)."""
        if self.inflate is None:
            return raw
        try:
            data = self.inflate.decompress(raw, limit)
        except zlib.error as exc:
            if self.encoding != "deflate" or self.started or self.headerless:
                raise ToolFailed(f"the body is not valid {self.encoding}: {exc}") from None
            self.inflate = zlib.decompressobj(-zlib.MAX_WBITS)  # deflate without a header
            self.headerless = True
            return self.decode(raw, limit)
        self.started = True
        return data


def _fetched(target: Target, response: httpx.Response, data: bytes, truncated: bool) -> Fetched:
    content_type = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return Fetched(target.url, response.status_code, content_type, response.charset_encoding,
                   data, truncated)  # fmt: skip
