"""`gsv__MemorySearch` and `gsv__MemoryGet` (docs/tools.md, docs/memory.md): the agent
searches its notes and past conversations, then reads around a hit, each within what its
session may see (gateway/memory_reach.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from pydantic import Field

from gsv_core.agent.tools import ToolCallContext
from gsv_core.gateway.memory_reach import memory_scope
from gsv_core.gateway.native_registry import NativeArgs
from gsv_core.gateway.native_registry import NativeTool
from gsv_core.gateway.native_registry import NativeToolRegistry
from gsv_core.memory.search import MAX_AROUND
from gsv_core.memory.search import MAX_LIMIT
from gsv_core.memory.search import Kind
from gsv_core.memory.search import MemoryScope
from gsv_core.memory.search import search_request

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway

TIME_HINT = "ISO date or date-time (UTC), or an age such as 7d."


class MemorySearchArgs(NativeArgs):
    query: str = Field(min_length=1, max_length=1000, description="Plain words.")
    scope: Kind = "all"
    since: str | None = Field(default=None, description=TIME_HINT)
    until: str | None = Field(default=None, description=TIME_HINT)
    limit: int = Field(default=8, ge=1, le=MAX_LIMIT)


class MemoryGetArgs(NativeArgs):
    ref: str = Field(min_length=1, max_length=40, description='A hit\'s ref, e.g. "m:42".')
    before: int = Field(default=3, ge=0, le=MAX_AROUND)
    after: int = Field(default=3, ge=0, le=MAX_AROUND)


def register(registry: NativeToolRegistry, gateway: Gateway) -> None:
    def scope(ctx: ToolCallContext) -> MemoryScope:
        origin = gateway.spawn_origins.of(ctx.session_key)
        return memory_scope(ctx, origin, gateway.sessions.routing())

    async def memory_search(args: MemorySearchArgs, ctx: ToolCallContext) -> dict[str, Any]:
        request = search_request(
            args.query, args.scope, args.since, args.until, args.limit, gateway.now_ms()
        )
        reach = scope(ctx)
        results = await gateway.memory.search(request, reach)
        return {"results": results, "count": len(results), "searched": reach.describe()}

    async def memory_get(args: MemoryGetArgs, ctx: ToolCallContext) -> dict[str, Any]:
        return await gateway.memory.around(args.ref, args.before, args.after, scope(ctx))

    registry.add(
        NativeTool(
            "gsv__MemorySearch",
            "Search your notes and past conversations (archived ones too) for words; "
            "returns ranked snippets with where each came from.",
            MemorySearchArgs,
            memory_search,
        )
    )
    registry.add(
        NativeTool(
            "gsv__MemoryGet",
            "Read the messages or note lines around a gsv__MemorySearch hit, by its ref.",
            MemoryGetArgs,
            memory_get,
        )
    )
