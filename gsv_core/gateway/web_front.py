"""What the gateway answers over plain HTTP before a WebSocket upgrade (websockets'
`process_request` hook; webhooks are read earlier, by `http_front`):

    GET /health          {"status": "healthy"}
    GET /ws              the upgrade, if the Origin may open it (else 403)
    GET /  /assets/...   the web chat (web_assets)
    GET /auth?code=...   a browser's sign-in (web_signin)
    anything else        404

Origins (docs/web.md#origins): a native client sends none and passes; a browser passes
when its origin is listed in `gateway.allowedOrigins`, or is the gateway's own origin (the
scheme and the Host it was reached at) with a host that cannot be a rebinding name: an IP
address, `localhost`, or a host of a listed origin. A page of any other site, or a DNS
name an attacker points at 127.0.0.1, is refused before the upgrade. The sign-in cookie
is read only from an upgrade with an allowed Origin: one without (a native client) must
show a token.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable
from urllib.parse import urlsplit

from websockets.asyncio.server import ServerConnection
from websockets.http11 import Request
from websockets.http11 import Response

from gsv_core.gateway.auth import Authenticator
from gsv_core.gateway.peer_address import host_of
from gsv_core.gateway.web_assets import WebAssets
from gsv_core.gateway.web_signin import browser_credential
from gsv_core.gateway.web_signin import sign_in

FORBIDDEN_ORIGIN = "this page's origin may not open the gateway's WebSocket"


class WebFront:
    def __init__(
        self,
        pages: WebAssets,
        auth: Authenticator,
        allowed_origins: Callable[[], list[str]],
        tls: bool,
    ) -> None:
        self.pages = pages
        self.auth = auth
        self._allowed = allowed_origins  # read per request: `config.set` applies at once
        self.tls = tls

    async def process_request(
        self, connection: ServerConnection, request: Request
    ) -> Response | None:
        path = request.path.split("?", 1)[0]
        if path == "/ws":
            return self._upgrade(connection, request)
        if path == "/health":
            return _json(connection, 200, {"status": "healthy"})
        if path == "/auth":
            host = host_of(connection.remote_address)
            return await sign_in(request, host, self.auth, self.pages, self.tls)
        if self.pages.wants(path):
            return self.pages.respond(request, path)
        return _json(connection, 404, {"error": "not found"})

    def _upgrade(self, connection: ServerConnection, request: Request) -> Response | None:
        if request.headers.get("Upgrade", "").lower() != "websocket":
            return _json(connection, 404, {"error": "/ws expects a WebSocket upgrade"})
        origin = request.headers.get("Origin")
        if origin is None or self.origin_allowed(origin, request.headers.get("Host", "")):
            return None
        return connection.respond(403, FORBIDDEN_ORIGIN + "\n")

    def browser_credential(self, request: Request | None) -> str | None:
        """The web credential of an upgrade's sign-in cookie, when a browser page of an
        allowed origin made it; None for an upgrade without an Origin (a program, which
        may have been handed the cookie: browsers send it to every port of the host)."""
        if request is None:
            return None
        origin = request.headers.get("Origin")
        if origin is None or not self.origin_allowed(origin, request.headers.get("Host", "")):
            return None
        return browser_credential(request.headers, self.tls)

    def origin_allowed(self, origin: str, host: str) -> bool:
        listed = [entry.rstrip("/") for entry in self._allowed()]
        if origin.rstrip("/") in listed:
            return True
        own = f"{'https' if self.tls else 'http'}://{host}"
        if not host or origin != own:
            return False
        hostname = urlsplit(own).hostname or ""
        return _literal_or_local(hostname) or hostname in {urlsplit(e).hostname for e in listed}


def _literal_or_local(hostname: str) -> bool:
    """IP addresses and `localhost` cannot be re-pointed by a stranger's DNS."""
    if hostname == "localhost":
        return True
    try:
        ipaddress.ip_address(hostname)
    except ValueError:
        return False
    return True


def _json(connection: ServerConnection, status: int, body: dict[str, str]) -> Response:
    response = connection.respond(status, json.dumps(body) + "\n")
    response.headers["Content-Type"] = "application/json"
    return response
