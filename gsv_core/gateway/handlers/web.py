"""`web.link`: a one-time sign-in link for the web chat (docs/web.md). Owner only: the
link signs a browser in as the owner's client, for 30 days or until `auth.revoke`."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from gsv_core.gateway.auth import WEB
from gsv_core.gateway.auth import WEB_CODE_TTL_MS
from gsv_core.gateway.handlers.routes import Routes
from gsv_core.protocol import methods as m
from gsv_core.protocol.schemas.web import WebLinkParams
from gsv_core.protocol.schemas.web import WebLinkResult
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway

SIGN_IN_PATH = "/auth"


def register(router: Router, gateway: Gateway) -> None:
    route = Routes(router)

    @route(m.WEB_LINK, WebLinkParams)
    async def web_link(ctx: RequestContext, params: WebLinkParams) -> WebLinkResult:
        code, expires = await gateway.auth.invite(WEB, None, ttl_ms=WEB_CODE_TTL_MS)
        return WebLinkResult(code=code, path=f"{SIGN_IN_PATH}?code={quote(code)}",
                             expiresAt=expires)  # fmt: skip
