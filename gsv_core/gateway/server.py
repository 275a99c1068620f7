"""`serve()`: run a gateway on a host and port as an async context manager.

    async with serve(ServerConfig(database=path), port=0) as gw:
        print(gw.url)   # ws://127.0.0.1:54321/ws

HTTP surface: `GET /ws` upgrades to the WebSocket protocol, `GET /health` answers
`{"status":"healthy"}`, `GET /`, `/assets/...` and `/auth` serve the web chat (see
`web_front`), `GET|POST /channels/{name}/webhook` goes to the channel's webhook (see
`http_front`), anything else is 404.

Secure by default: every `connect` needs a credential (the owner token is
generated on first start and kept in the local secret store, where the CLI, the TUI and a
local node find it); a browser handshake is refused (403) unless its Origin is the
gateway's own or in `gateway.allowedOrigins` (docs/web.md#origins); beyond loopback the
server speaks TLS, or plain ws only when `insecure_no_tls` says the network is trusted.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import AsyncIterator
from collections.abc import Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from websockets.asyncio.server import Server
from websockets.asyncio.server import ServerConnection
from websockets.asyncio.server import serve as ws_serve

from gsv_core import heap
from gsv_core.defaults import DEFAULT_GATEWAY_HOST
from gsv_core.defaults import DEFAULT_GATEWAY_PORT
from gsv_core.defaults import GATEWAY_PING_INTERVAL
from gsv_core.defaults import MAX_MESSAGE_BYTES
from gsv_core.errors import InvalidParams
from gsv_core.gateway.agent_host import ProviderFactory
from gsv_core.gateway.app import build_gateway
from gsv_core.gateway.audit import MIN_TOKEN_LENGTH
from gsv_core.gateway.connection import Connection
from gsv_core.gateway.http_front import HttpFront
from gsv_core.gateway.keepalive import Keepalive
from gsv_core.gateway.listening import Listening
from gsv_core.gateway.state import Gateway
from gsv_core.gateway.web_assets import PACKAGED_PAGE
from gsv_core.gateway.web_assets import WebAssets
from gsv_core.gateway.web_front import WebFront
from gsv_core.localconfig import generate_token
from gsv_core.localconfig import stored_secret
from gsv_core.loopback import is_loopback
from gsv_core.protocol.frames import WRITE_LIMIT
from gsv_core.providers.retry import RetryPolicy

log = logging.getLogger(__name__)

DEFAULT_HOST = DEFAULT_GATEWAY_HOST
DEFAULT_PORT = DEFAULT_GATEWAY_PORT
# Large enough for a 10 MiB image read by a node, base64-encoded, inside a frame.
DEFAULT_MAX_SIZE = MAX_MESSAGE_BYTES


@dataclass
class ServerConfig:
    database: Path
    max_size: int = DEFAULT_MAX_SIZE
    # wss: required to listen beyond loopback unless insecure_no_tls (a trusted LAN/VPN)
    tls: ssl.SSLContext | None = None
    insecure_no_tls: bool = False
    # keepalive: a silent peer (a frozen node, a dropped network) is closed, its calls
    # failed and its tools withdrawn within ping_interval + ping_timeout + close_timeout
    # (10 + 3 + 2 = 15 s). A peer is pinged only after ping_interval without a word from it
    # (gateway/keepalive.py); a node's heartbeat (NodeSettings.heartbeat, 8 s) comes sooner,
    # so idle nodes are never pinged: the pings and pongs were most of the idle CPU. A pong
    # needs a round trip and the peer's event loop running: a node whose loop stalls for
    # ping_interval - heartbeat + ping_timeout (5 s) at the wrong moment is dropped
    ping_interval: float | None = GATEWAY_PING_INTERVAL
    ping_timeout: float | None = 3.0
    # a peer that stopped answering will not answer our close frame either
    close_timeout: float = 2.0
    # tests put an in-process fake LLM here; None: providers from the config
    provider_factory: ProviderFactory | None = None
    # tests move time; None: the wall clock (epoch milliseconds)
    now_ms: Callable[[], int] | None = None
    # tests record retry waits instead of sleeping them; None: the default RetryPolicy
    retry: RetryPolicy | None = None
    # the web chat's files; None: the ones shipped in the package (gsv_core/web/static)
    web_root: Path | None = None
    # the process is the gateway's own (`gsv gateway run`): once started, what it holds
    # is frozen out of the garbage collector's full walks (gsv_core/heap.py); a test
    # process serving gateways leaves its heap alone
    freeze_heap: bool = False


@dataclass
class RunningGateway:
    gateway: Gateway
    server: Server
    host: str
    port: int
    tls: bool = False
    keepalive: Keepalive | None = None  # None: `ServerConfig` turned it off

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'wss' if self.tls else 'ws'}://{host}:{self.port}/ws"

    @property
    def http_url(self) -> str:
        return self.url.replace("ws", "http", 1).removesuffix("/ws")

    @property
    def token(self) -> str:
        """The owner token (clients connect with it)."""
        token = self.gateway.config.auth_token
        assert token is not None  # serve() made sure of one before listening
        return token


@asynccontextmanager
async def serve(
    config: ServerConfig, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT
) -> AsyncIterator[RunningGateway]:
    """Build a gateway and serve it until the block exits."""
    gateway = await build_gateway(
        config.database, config.provider_factory, config.now_ms, config.retry
    )
    front = HttpFront(gateway)  # webhooks (POST /channels/{name}/webhook) on this port
    pages = WebAssets(config.web_root or PACKAGED_PAGE)
    web = WebFront(pages, gateway.auth, _origins_setting(gateway), config.tls is not None)
    keepalive = _keepalive(config)
    try:
        _check_exposure(host, config)
        await _ensure_owner_token(gateway)
        gateway.config.token_required = True

        async def handler(ws: ServerConnection) -> None:
            browser = web.browser_credential(ws.request)
            await Connection(ws, gateway, browser, keepalive).run()

        async with ws_serve(
            handler,
            host,
            port,
            process_request=web.process_request,  # /health, the web chat, Origin checks
            ssl=config.tls,
            create_connection=front.connection_type(),
            max_size=config.max_size,
            compression=None,
            write_limit=WRITE_LIMIT,
            ping_interval=None,  # one keepalive for all (`keepalive`), not a task per peer
            close_timeout=config.close_timeout,
            server_header=f"gsv/{gateway.version}",
        ) as server:
            bound = _bound_port(server, port)
            gateway.listening = Listening(host, is_loopback(host), config.tls is not None)
            scheme = "wss" if config.tls else "ws"
            log.info("gateway listening on %s://%s:%d/ws", scheme, host, bound)
            await gateway.sessions.recover()
            expected = gateway.nodes.expected_back()
            # after recovery: a missed job runs once, when its nodes are back (or a grace)
            gateway.cron.start(lambda: expected <= set(gateway.nodes.online_ids()))
            gateway.heartbeat.start()  # first beats one interval from now
            await gateway.channels.restore()
            gateway.retention.start()  # sweeps now, then hourly
            gateway.mcp.start()  # each server connects in its own task
            gateway.web_sessions.start()  # browsers' sockets end with their sign-in
            if keepalive is not None:
                keepalive.start()
            if config.freeze_heap:
                heap.freeze_started()
            tls = config.tls is not None
            yield RunningGateway(gateway, server, host, bound, tls=tls, keepalive=keepalive)
            server.close()
            await server.wait_closed()
    finally:
        if keepalive is not None:
            await keepalive.close()
        await front.close()
        await gateway.close()


def _keepalive(config: ServerConfig) -> Keepalive | None:
    if config.ping_interval is None or config.ping_timeout is None:
        return None  # no keepalive: a silent peer stays until the OS notices
    return Keepalive(config.ping_interval, config.ping_timeout, config.close_timeout)


def _bound_port(server: Server, requested: int) -> int:
    for sock in server.sockets:
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            port: int = sock.getsockname()[1]
            return port
    return requested


def _check_exposure(host: str, config: ServerConfig) -> None:
    if is_loopback(host) or config.tls is not None or config.insecure_no_tls:
        return
    raise InvalidParams(
        f"refusing to listen on {host} without TLS: anyone on that network could read the "
        "token and every message. Give --tls-cert and --tls-key (wss), put the gateway "
        "behind Tailscale or a TLS reverse proxy on 127.0.0.1, or pass --insecure-no-tls "
        "on a network you trust"
    )


def _origins_setting(gateway: Gateway) -> Callable[[], list[str]]:
    return lambda: [str(origin) for origin in gateway.config.setting("gateway.allowedOrigins")]


async def _ensure_owner_token(gateway: Gateway) -> None:
    """First start: a strong owner token. `auth.token` is the secret store's
    `gateway.token`, where the CLI, the TUI and a local node look: nothing to type. One
    already there (`gsv init`, an earlier gateway) is adopted."""
    token = gateway.config.auth_token
    if token is None:
        stored = await asyncio.to_thread(stored_secret, "gateway.token")
        token = stored or generate_token()
        await gateway.config.set("auth.token", token)
        log.info("owner token %s the local secret store", "adopted from" if stored else "kept in")
    if len(token) < MIN_TOKEN_LENGTH:
        log.warning("the owner token is short: `gsv security audit --fix` replaces it")
