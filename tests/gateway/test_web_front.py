"""The web chat's HTTP side (docs/web.md): its files, the one-time sign-in, the cookie that
admits a browser's WebSocket, and the Origin rule, all over real sockets."""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed
from websockets.exceptions import InvalidStatus

from gsv_core.client import GatewayClient
from gsv_core.errors import RateLimited
from gsv_core.errors import Unauthorized
from gsv_core.gateway.auth import JOIN_FAILURES_ALLOWED
from gsv_core.gateway.auth import WEB_CODE_TTL_MS
from gsv_core.gateway.auth import WEB_SESSION_MS
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from tests.cron.conftest import Clock
from tests.waiting import WAIT
from tests.wire import connect_params
from tests.wire import handshake

TOOL = {"name": "Bash", "description": "run", "inputSchema": {"type": "object"}}
PAGE = "<!doctype html><title>gsv</title><script type=module src=/assets/js/main.js></script>"


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def web_root(tmp_path: Path) -> Path:
    root = tmp_path / "static"
    (root / "js").mkdir(parents=True)
    (root / "index.html").write_text(PAGE)
    (root / "js" / "main.js").write_text("export const answer = 42;\n" * 200)
    (root / ".secret").write_text("hidden")
    (tmp_path / "outside.txt").write_text("outside the page")
    (root / "js" / "link.txt").symlink_to(tmp_path / "outside.txt")
    return root


@pytest.fixture
async def gw(tmp_path: Path, web_root: Path, clock: Clock) -> AsyncIterator[RunningGateway]:
    config = ServerConfig(database=tmp_path / "db" / "gsv.db", web_root=web_root, now_ms=clock)
    async with serve(config, port=0) as running:
        yield running


async def http(gw: RunningGateway, path: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    """One raw HTTP/1.1 GET (no redirects followed); header names lower-cased."""
    reader, writer = await asyncio.open_connection("127.0.0.1", gw.port)
    lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{gw.port}", "Connection: close"]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    raw = await asyncio.wait_for(reader.read(), WAIT)
    writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode().split("\r\n")
    parsed = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        parsed[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), parsed, body


async def link(gw: RunningGateway) -> dict[str, Any]:
    async with GatewayClient(gw.url, token=gw.token) as client:
        result: dict[str, Any] = await client.call("web.link", {})
    return result


async def signed_in_cookie(gw: RunningGateway) -> str:
    status, headers, _ = await http(gw, (await link(gw))["path"])
    assert status == 303, headers
    return headers["set-cookie"].split(";", 1)[0]


def origin(gw: RunningGateway) -> str:
    return f"http://127.0.0.1:{gw.port}"


# -- the page's files --------------------------------------------------------------------
async def test_root_is_the_page_with_a_strict_policy(gw: RunningGateway) -> None:
    status, headers, body = await http(gw, "/")
    assert status == 200 and body.decode() == PAGE
    assert headers["content-type"] == "text/html; charset=utf-8"
    policy = headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    assert "frame-ancestors 'none'" in policy
    sockets = f"connect-src 'self' ws://127.0.0.1:{gw.port} wss://127.0.0.1:{gw.port};"
    assert sockets in policy  # this host's sockets only: nowhere else to send what it reads
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"


@pytest.mark.parametrize("host", ["evil.example; script-src *", "a b", "", "x:1:2"])
async def test_a_strange_host_never_widens_the_policy(gw: RunningGateway, host: str) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", gw.port)
    writer.write(f"GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    head = (await asyncio.wait_for(reader.read(), WAIT)).decode(errors="replace")
    writer.close()
    policy = next(line for line in head.split("\r\n") if line.startswith("Content-Security"))
    assert "connect-src 'self';" in policy and "*" not in policy


async def test_assets_are_compressed_and_revalidated(gw: RunningGateway) -> None:
    status, headers, body = await http(gw, "/assets/js/main.js", Accept_Encoding="gzip, br")
    assert status == 200 and headers["content-encoding"] == "gzip"
    assert headers["content-type"] == "text/javascript; charset=utf-8"
    assert gzip.decompress(body).startswith(b"export const answer")
    again, revalidated, empty = await http(gw, "/assets/js/main.js", If_None_Match=headers["etag"])
    assert (again, empty) == (304, b"") and revalidated["etag"] == headers["etag"]
    plain_status, plain_headers, plain = await http(gw, "/assets/js/main.js")
    assert plain_status == 200 and "content-encoding" not in plain_headers
    assert plain.startswith(b"export const answer")


@pytest.mark.parametrize(
    "path",
    [
        "/assets/../index.html",
        "/assets/%2e%2e/outside.txt",
        "/assets/js/../../outside.txt",
        "/assets/js%2fmain.js",
        "/assets/.secret",
        "/assets/js/link.txt",  # a symlink out of the page directory
        "/assets/",
        "/assets/js/missing.js",
        "/index.html/",
    ],
)
async def test_nothing_outside_the_page_is_served(gw: RunningGateway, path: str) -> None:
    status, _, body = await http(gw, path)
    assert status == 404
    assert b"outside the page" not in body and b"hidden" not in body


async def test_no_page_without_its_files(tmp_path: Path) -> None:
    config = ServerConfig(database=tmp_path / "gsv.db", web_root=tmp_path / "missing")
    async with serve(config, port=0) as running:
        status, _, _ = await http(running, "/")
    assert status == 404


# -- signing in ------------------------------------------------------------------------
async def test_a_link_signs_in_once(gw: RunningGateway) -> None:
    issued = await link(gw)
    assert issued["path"] == f"/auth?code={issued['code']}"
    status, headers, _ = await http(
        gw, issued["path"], User_Agent="Mozilla/5.0 (X11; Linux) Firefox/130.0"
    )
    assert status == 303 and headers["location"] == "/"
    cookie = [part.strip() for part in headers["set-cookie"].split(";")]
    assert cookie[0].startswith("gsv_web=") and len(cookie[0]) > 40
    assert {"HttpOnly", "SameSite=Strict", "Path=/", f"Max-Age={WEB_SESSION_MS // 1000}"} <= set(
        cookie
    )
    assert "Secure" not in cookie  # plain http on loopback: a Secure cookie would be dropped
    again, _, body = await http(gw, issued["path"])
    assert again == 401 and b"already used" in body and b"gsv web" in body
    async with GatewayClient(gw.url, token=gw.token) as client:
        listed = (await client.call("auth.list", {}))["credentials"]
    assert [c["role"] for c in listed] == ["web"]
    assert listed[0]["subject"].startswith("Firefox on Linux (")


async def test_an_expired_link_signs_nobody_in(gw: RunningGateway, clock: Clock) -> None:
    issued = await link(gw)
    clock.now += WEB_CODE_TTL_MS + 1
    status, headers, body = await http(gw, issued["path"])
    assert status == 401 and "set-cookie" not in headers and b"two minutes" in body


@pytest.mark.parametrize(
    "query", ["", "?code=", "?code=AAAAA-AAAAA", "?code=" + "x" * 500, "?code=<script>"]
)
async def test_a_wrong_code_is_refused_as_text(gw: RunningGateway, query: str) -> None:
    status, headers, body = await http(gw, "/auth" + query)
    assert status == 401 and "set-cookie" not in headers
    assert headers["content-type"].startswith("text/plain") and b"<script>" not in body


async def test_guessing_codes_is_rate_limited(gw: RunningGateway) -> None:
    for _ in range(JOIN_FAILURES_ALLOWED):
        assert (await http(gw, "/auth?code=AAAAA-AAAAA"))[0] == 401
    issued = await link(gw)
    status, _, body = await http(gw, issued["path"])
    assert status == 429 and b"wait a minute" in body


@pytest.mark.parametrize("site", ["cross-site", "same-site"])
async def test_a_sign_in_another_sites_page_makes_uses_up_nothing(
    gw: RunningGateway, site: str
) -> None:
    """An <img src=".../auth?code=..."> on any page the owner visits: refused (403) without
    trying the code, however many, so the owner's own link still signs in; a valid code
    sent that way is not used either."""
    for _ in range(JOIN_FAILURES_ALLOWED + 5):
        status, headers, body = await http(gw, "/auth?code=AAAAA-AAAAA", Sec_Fetch_Site=site)
        assert status == 403 and "set-cookie" not in headers and b"another web page" in body
    issued = await link(gw)
    status, headers, _ = await http(gw, issued["path"], Sec_Fetch_Site=site)
    assert status == 403 and "set-cookie" not in headers
    status, headers, _ = await http(gw, issued["path"], Sec_Fetch_Site="none")
    assert status == 303 and headers["set-cookie"].startswith("gsv_web=")


async def test_wrong_codes_from_one_address_do_not_lock_out_another(gw: RunningGateway) -> None:
    """The allowance of wrong codes is per address: one address past it waits (429),
    the owner's sign-in from another address goes through."""
    auth = gw.gateway.auth
    for _ in range(JOIN_FAILURES_ALLOWED):
        with pytest.raises(Unauthorized):
            await auth.sign_in("AAAAA-AAAAA", "guesser", "203.0.113.9")
    code = (await link(gw))["path"].split("code=", 1)[1]
    with pytest.raises(RateLimited):
        await auth.sign_in(code, "guesser", "203.0.113.9")
    assert (await auth.sign_in(code, "owner's browser", "198.51.100.4")).token


# -- the browser's WebSocket -----------------------------------------------------------
async def browser_connect(gw: RunningGateway, cookie: str | None, from_origin: str | None) -> Any:
    headers = {"Cookie": cookie} if cookie else {}
    ws = await connect(gw.url, additional_headers=headers, origin=from_origin)  # type: ignore[arg-type]
    await ws.send(json.dumps({"type": "req", "id": "1", "method": "connect",
                              "params": connect_params(token=None, client_id="web-tab")}))  # fmt: skip
    return ws, json.loads(await ws.recv())


async def test_the_cookie_admits_the_page_as_a_client(gw: RunningGateway) -> None:
    cookie = await signed_in_cookie(gw)
    ws, hello = await browser_connect(gw, cookie, origin(gw))
    assert hello["ok"] is True and hello["payload"]["type"] == "hello-ok"
    await ws.send(json.dumps({"type": "req", "id": "2", "method": "config.get", "params": {}}))
    assert json.loads(await ws.recv())["ok"] is True
    await ws.close()


async def test_without_a_cookie_the_page_is_signed_out(gw: RunningGateway) -> None:
    for cookie in (None, "gsv_web=w0000.nope", 'gsv_web="bad; value', "other=1"):
        ws, hello = await browser_connect(gw, cookie, origin(gw))
        assert hello["ok"] is False and hello["error"]["code"] == 401
        # a cookie that signs nobody in says how to sign in; none at all is the usual 401
        assert ("gsv web" in hello["error"]["message"]) == (cookie == "gsv_web=w0000.nope")
        await ws.close()


async def test_a_token_of_another_role_is_not_a_browser_cookie(gw: RunningGateway) -> None:
    """A node's credential in the cookie signs no browser in."""
    async with connect(gw.url) as node:
        joined = await handshake(node, mode="node", client_id="box", tools=[TOOL])
    node_token = joined["credential"]
    _, hello = await browser_connect(gw, f"gsv_web={node_token}", origin(gw))
    assert hello["error"]["code"] == 401


async def test_a_sign_in_lasts_thirty_days(gw: RunningGateway, clock: Clock) -> None:
    cookie = await signed_in_cookie(gw)
    clock.now += WEB_SESSION_MS + 1
    _, hello = await browser_connect(gw, cookie, origin(gw))
    assert hello["error"]["code"] == 401 and "30 days" in hello["error"]["message"]


async def test_revoking_signs_the_browser_out_at_once(gw: RunningGateway) -> None:
    cookie = await signed_in_cookie(gw)
    ws, hello = await browser_connect(gw, cookie, origin(gw))
    assert hello["ok"] is True
    async with GatewayClient(gw.url, token=gw.token) as client:
        (web,) = (await client.call("auth.list", {}))["credentials"]
        assert web["connected"] is True
        revoked = await client.call("auth.revoke", {"id": web["id"]})
    assert revoked["disconnected"] == 1
    with pytest.raises(ConnectionClosed):
        while True:
            await asyncio.wait_for(ws.recv(), WAIT)
    _, again = await browser_connect(gw, cookie, origin(gw))
    assert again["error"]["code"] == 401


# -- origins -----------------------------------------------------------------------------
async def raw_upgrade(gw: RunningGateway, host: str, from_origin: str) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", gw.port)
    key = base64.b64encode(os.urandom(16)).decode()
    head = [
        "GET /ws HTTP/1.1", f"Host: {host}", "Upgrade: websocket", "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13", f"Origin: {from_origin}",
    ]  # fmt: skip
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
    status_line = await asyncio.wait_for(reader.readline(), WAIT)
    writer.close()
    return int(status_line.split()[1])


@pytest.mark.parametrize(
    ("host", "page", "status"),
    [
        ("127.0.0.1:{port}", "http://127.0.0.1:{port}", 101),
        ("localhost:{port}", "http://localhost:{port}", 101),
        ("[::1]:{port}", "http://[::1]:{port}", 101),
        ("127.0.0.1:{port}", "https://127.0.0.1:{port}", 403),  # not this server's scheme
        ("127.0.0.1:{port}", "http://127.0.0.1:1", 403),  # another port, another origin
        ("127.0.0.1:{port}", "http://evil.example", 403),
        ("127.0.0.1:{port}", "null", 403),  # a sandboxed frame or a file:// page
        # DNS rebinding: a stranger's name resolved to 127.0.0.1 is its own "same origin"
        ("evil.example:{port}", "http://evil.example:{port}", 403),
    ],
)
async def test_only_the_gateways_own_origin_opens_the_socket(
    gw: RunningGateway, host: str, page: str, status: int
) -> None:
    assert await raw_upgrade(gw, host.format(port=gw.port), page.format(port=gw.port)) == status


async def test_listed_origins_and_their_hosts_are_admitted(gw: RunningGateway) -> None:
    async with GatewayClient(gw.url, token=gw.token) as client:
        await client.call(
            "config.set", {"path": "gateway.allowedOrigins", "value": ["https://chat.example"]}
        )
    assert await raw_upgrade(gw, "127.0.0.1", "https://chat.example") == 101
    # the gateway reached under a listed name (behind a TLS proxy that keeps Host)
    assert await raw_upgrade(gw, f"chat.example:{gw.port}", f"http://chat.example:{gw.port}") == 101
    assert await raw_upgrade(gw, "127.0.0.1", "https://other.example") == 403


async def test_a_refused_origin_never_reaches_connect(gw: RunningGateway) -> None:
    cookie = await signed_in_cookie(gw)
    with pytest.raises(InvalidStatus) as refused:
        await connect(gw.url, additional_headers={"Cookie": cookie}, origin="http://evil.example")  # type: ignore[arg-type]
    assert refused.value.response.status_code == 403


@pytest.mark.parametrize("path", ["/", "/health", "/auth?code=wrong", "/no-such-file.js"])
async def test_every_answer_says_server_once(gw: RunningGateway, path: str) -> None:
    """One `Server: gsv/<version>` per answer (issue 40.8: pages said it twice)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", gw.port)
    writer.write(
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{gw.port}\r\nConnection: close\r\n\r\n".encode()
    )
    raw = await asyncio.wait_for(reader.read(), 30)
    writer.close()
    head = raw.partition(b"\r\n\r\n")[0].lower()
    assert head.count(b"\r\nserver: gsv/") == 1, head
