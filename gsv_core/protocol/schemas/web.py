"""`web.link` params and result (docs/web.md, gsv addition)."""

from __future__ import annotations

from gsv_core.protocol.schemas import WireModel


class WebLinkParams(WireModel):
    pass


class WebLinkResult(WireModel):
    code: str
    path: str  # `/auth?code=...`: the client puts its own view of the gateway's URL before it
    expiresAt: int
