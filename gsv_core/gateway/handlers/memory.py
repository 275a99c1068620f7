"""`memory.search`, `memory.reindex`, `memory.status` (docs/protocol.md#memory): the
owner's search over every note and session, the rebuild, and how far a build got."""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from gsv_core.gateway.handlers.routes import Routes
from gsv_core.memory.search import MemoryScope
from gsv_core.memory.search import search_request
from gsv_core.protocol import methods as m
from gsv_core.protocol.schemas.memory import MemorySearchParams
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway


def register(router: Router, gateway: Gateway) -> None:
    route = Routes(router)

    @route(m.MEMORY_SEARCH, MemorySearchParams)
    async def memory_search(ctx: RequestContext, params: MemorySearchParams) -> dict[str, Any]:
        request = search_request(params.query, params.scope, params.since, params.until,
                                 params.limit, gateway.now_ms())  # fmt: skip
        results = await gateway.memory.search(request, MemoryScope.everything())
        return {"results": results, "count": len(results)}

    @route(m.MEMORY_REINDEX)
    async def memory_reindex(ctx: RequestContext, params: object) -> dict[str, Any]:
        return await gateway.memory.reindex()

    @route(m.MEMORY_STATUS)
    async def memory_status(ctx: RequestContext, params: object) -> dict[str, Any]:
        return await gateway.memory.status()
