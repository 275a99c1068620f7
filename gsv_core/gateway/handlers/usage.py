"""`usage.get`: the usage ledger summed over a time range (docs/protocol.md#methods)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from gsv_core.gateway.handlers.routes import Routes
from gsv_core.protocol import methods as m
from gsv_core.protocol.schemas.usage import UsageGetParams
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router
from gsv_core.storage.usage import DAY_MS

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway

DEFAULT_DAYS = 7


def register(router: Router, gateway: Gateway) -> None:
    route = Routes(router)

    @route(m.USAGE_GET, UsageGetParams)
    async def usage_get(ctx: RequestContext, params: UsageGetParams) -> dict[str, Any]:
        until = params.until if params.until is not None else gateway.now_ms() + 1
        since = params.since if params.since is not None else until - DEFAULT_DAYS * DAY_MS
        return await gateway.usage.report(since, until, params.groupBy)
