"""The web sign-in cookie is a browser's credential only (issue 42.6, docs/web.md): it
admits a socket only from an upgrade with an allowed Origin, it is `__Host-` prefixed under
TLS, a socket it opened closes when its sign-in ends, and `auth.revoke` with `all` signs
every browser out. Real gateways, raw HTTP and WebSocket frames, the injected clock."""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus
from websockets.typing import Origin

from gsv_core.client import GatewayClient
from gsv_core.gateway.auth import WEB_SESSION_MS
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from tests.cron.conftest import Clock
from tests.gateway.test_web_front import browser_connect
from tests.gateway.test_web_front import origin
from tests.gateway.test_web_front import signed_in_cookie
from tests.wire import connect_params
from tests.wire import handshake
from tests.wire import request

TOOL = {"name": "Bash", "description": "run", "inputSchema": {"type": "object"}}
HOUR = 3_600_000


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def gw(tmp_path: Path, clock: Clock) -> AsyncIterator[RunningGateway]:
    """A gateway on a clock the test moves."""
    config = ServerConfig(database=tmp_path / "db" / "gsv.db", now_ms=clock)
    async with serve(config, port=0) as running:
        yield running


async def closed_with(ws: ClientConnection) -> tuple[int | None, str | None]:
    """Wait (bounded) for the gateway to close `ws`: its close code and reason."""
    await asyncio.wait_for(ws.wait_closed(), 10)
    return ws.close_code, ws.close_reason


async def still_served(ws: ClientConnection) -> bool:
    """The socket is open and answers (a node's answer is a 403: still an answer)."""
    return (await request(ws, "config.get", {}))["type"] == "res"


async def tab(gw: RunningGateway, cookie: str) -> ClientConnection:
    """A signed-in page's socket, connected (each tab its own client id)."""
    ws = await connect(gw.url, additional_headers={"Cookie": cookie}, origin=Origin(origin(gw)))
    reply = await request(ws, "connect", connect_params(token=None))
    assert reply["ok"], reply
    return ws


async def owner_call(gw: RunningGateway, method: str, params: dict[str, Any]) -> Any:
    async with GatewayClient(gw.url, token=gw.token) as owner:
        return await owner.call(method, params)


# -- Origin: the cookie is read from a browser page's upgrade only -----------------------
async def test_a_cookie_without_an_origin_signs_nobody_in(gw: RunningGateway) -> None:
    """A program holding the cookie (a dev server on another port is sent it with every
    request the browser makes there) connects with no Origin: 401 and 4001, as with no
    cookie at all; the same cookie from the gateway's own page is admitted."""
    cookie = await signed_in_cookie(gw)
    ws, hello = await browser_connect(gw, cookie, None)
    assert hello["ok"] is False and hello["error"]["code"] == 401
    assert (await closed_with(ws))[0] == 4001
    await (await tab(gw, cookie)).close()


async def test_a_page_on_another_port_cannot_use_the_cookie(gw: RunningGateway) -> None:
    """The browser sends the cookie to every port of 127.0.0.1, but a page served on
    another port sends its own origin: refused with 403 before any frame."""
    cookie = await signed_in_cookie(gw)
    elsewhere = await asyncio.start_server(lambda _r, w: w.close(), "127.0.0.1", 0)
    other_port = elsewhere.sockets[0].getsockname()[1]
    try:
        with pytest.raises(InvalidStatus) as refused:
            await connect(gw.url, additional_headers={"Cookie": cookie},
                          origin=Origin(f"http://127.0.0.1:{other_port}"))  # fmt: skip
        assert refused.value.response.status_code == 403
    finally:
        elsewhere.close()
        await elsewhere.wait_closed()


# -- a sign-in ends, even for an open socket ---------------------------------------------
async def test_an_open_socket_is_closed_when_its_sign_in_ends(
    gw: RunningGateway, clock: Clock
) -> None:
    """Thirty days after its sign-in a browser's open socket is closed (4001, "Signed
    out"); a browser signed in later and the owner's CLI stay connected."""
    first = await signed_in_cookie(gw)
    clock.advance(HOUR)
    second = await signed_in_cookie(gw)
    early, late = await tab(gw, first), await tab(gw, second)
    async with GatewayClient(gw.url, token=gw.token) as owner:
        clock.advance(WEB_SESSION_MS - HOUR - 1)
        gw.gateway.web_sessions.wake()
        assert await still_served(early)  # a millisecond before the end
        clock.advance(1)
        gw.gateway.web_sessions.wake()
        code, reason = await closed_with(early)
        assert code == 4001 and reason is not None and reason.startswith("Signed out")
        assert await still_served(late)
        assert (await owner.call("config.get", {}))["config"] is not None
    _, again = await browser_connect(gw, first, origin(gw))
    assert again["error"]["code"] == 401 and "30 days" in again["error"]["message"]
    await late.close()


# -- revoking every browser --------------------------------------------------------------
async def test_revoking_all_signs_every_browser_out_and_nothing_else(gw: RunningGateway) -> None:
    """`auth.revoke {all, role: web}` (`gsv web revoke --all`): every browser's socket
    closes with 4001 and its cookie is refused; a node's credential and socket stay."""
    cookies = [await signed_in_cookie(gw) for _ in range(2)]
    tabs = [await tab(gw, cookie) for cookie in cookies]
    async with connect(gw.url) as node:
        await handshake(node, mode="node", client_id="box", tools=[TOOL])
        result = await owner_call(gw, "auth.revoke", {"all": True, "role": "web"})
        assert result["disconnected"] == 2
        assert sorted(c["role"] for c in result["revoked"]) == ["web", "web"]
        for page in tabs:
            assert (await closed_with(page))[0] == 4001
        assert gw.gateway.nodes.online_ids() == ["box"]
        assert await still_served(node)
    for cookie in cookies:
        _, hello = await browser_connect(gw, cookie, origin(gw))
        assert hello["error"]["code"] == 401
    again = await owner_call(gw, "auth.revoke", {"all": True, "role": "web"})
    assert again == {"revoked": [], "disconnected": 0}


async def test_revoking_as_a_browser_never_touches_a_node(gw: RunningGateway) -> None:
    """`gsv web revoke box` names a node, not a browser: 404, and the node stays."""
    async with connect(gw.url) as node:
        await handshake(node, mode="node", client_id="box", tools=[TOOL])
        with pytest.raises(Exception, match="no active credential of a browser") as refused:
            await owner_call(gw, "auth.revoke", {"id": "box", "role": "web"})
        assert getattr(refused.value, "code", None) == 404
        assert await still_served(node)


# -- TLS: the `__Host-` cookie -------------------------------------------------------------
@pytest.fixture
async def tls_gw(
    tmp_path: Path, certificate: tuple[Path, Path]
) -> AsyncIterator[tuple[RunningGateway, str]]:
    """A gateway speaking TLS, and the file of the certificate a client trusts."""
    cert, key = certificate
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert, key)
    async with serve(ServerConfig(database=tmp_path / "tls" / "gsv.db", tls=server), port=0) as gw:
        yield gw, str(cert)


async def https_get(gw: RunningGateway, path: str, ca: str) -> list[str]:
    """One GET over TLS (no redirect followed): its response's header lines."""
    context = ssl.create_default_context(cafile=ca)
    reader, writer = await asyncio.open_connection("127.0.0.1", gw.port, ssl=context)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{gw.port}\r\n"
                 "Connection: close\r\n\r\n".encode())  # fmt: skip
    raw = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return raw.partition(b"\r\n\r\n")[0].decode().split("\r\n")


async def tls_connect(gw: RunningGateway, ca: str, cookie: str) -> dict[str, Any]:
    """The web page's connect over wss, from the gateway's own https origin."""
    context = ssl.create_default_context(cafile=ca)
    async with connect(gw.url, ssl=context, additional_headers={"Cookie": cookie},
                       origin=Origin(f"https://127.0.0.1:{gw.port}")) as ws:  # fmt: skip
        await ws.send(json.dumps({"type": "req", "id": "1", "method": "connect",
                                  "params": {"minProtocol": 1, "client":
                                             {"id": "web-tab", "mode": "client"}}}))  # fmt: skip
        reply: dict[str, Any] = json.loads(await ws.recv())
    return reply


async def test_under_tls_the_cookie_is_host_prefixed_and_an_older_one_still_works(
    tls_gw: tuple[RunningGateway, str],
) -> None:
    """Under TLS the sign-in sets `__Host-gsv_web` (Secure, Path=/, no Domain) and ends a
    `gsv_web` cookie from before; a browser that still has only the old name stays signed
    in until that sign-in ends."""
    running, ca = tls_gw
    async with GatewayClient(running.url, token=running.token, tls_ca=ca) as owner:
        path = (await owner.call("web.link", {}))["path"]
    head = await https_get(running, path, ca)
    assert head[0].split()[1] == "303"
    cookies = [
        line.split(":", 1)[1].strip() for line in head if line.lower().startswith("set-cookie:")
    ]
    assert len(cookies) == 2, cookies
    name_value, *flags = [part.strip() for part in cookies[0].split(";")]
    assert name_value.startswith("__Host-gsv_web=")
    assert {"Path=/", "HttpOnly", "SameSite=Strict", "Secure"} <= set(flags)
    assert not any(flag.lower().startswith("domain") for flag in flags)
    assert cookies[1].startswith("gsv_web=;") and "Max-Age=0" in cookies[1]
    token = name_value.split("=", 1)[1]
    assert (await tls_connect(running, ca, f"__Host-gsv_web={token}"))["ok"] is True
    assert (await tls_connect(running, ca, f"gsv_web={token}"))["ok"] is True


async def test_over_plain_http_a_host_prefixed_cookie_is_not_read(gw: RunningGateway) -> None:
    """Plain http sets and reads `gsv_web` only."""
    token = (await signed_in_cookie(gw)).split("=", 1)[1]
    _, hello = await browser_connect(gw, f"__Host-gsv_web={token}", origin(gw))
    assert hello["error"]["code"] == 401
