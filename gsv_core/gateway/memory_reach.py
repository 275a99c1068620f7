"""What a run may find in memory (docs/memory.md#privacy): the owner's and the system's
runs everything; a guest's run its own session only (nothing in a main session the
owner shares with guests under `session.dmScope: main`); a group's session, whoever
writes in it, its own conversation only. A sub-agent searches as the run that started
it (its origin: gateway/spawn_origins.py). Pure: the caller passes what it knows.
"""

from __future__ import annotations

from gsv_core.agent.tools import ToolCallContext
from gsv_core.authority import SYSTEM
from gsv_core.authority import authority_of
from gsv_core.authority import is_guest
from gsv_core.gateway.spawn_origins import SpawnOrigin
from gsv_core.memory.search import MemoryScope
from gsv_core.routing import RoutingSettings
from gsv_core.routing import is_main_session_key
from gsv_core.routing import parse_session_key

GROUP_KINDS = frozenset({"group", "channel", "thread"})


def memory_scope(
    ctx: ToolCallContext, origin: SpawnOrigin | None, routing: RoutingSettings
) -> MemoryScope:
    key, context = ctx.session_key, ctx.channel_context
    if origin is not None:
        key, context = origin.session_key, origin.channel_context
    if is_guest(context):
        if is_main_session_key(key, routing):  # the owner's conversation too
            return MemoryScope.conversation()
        return MemoryScope.conversation(key)
    if authority_of(context) == SYSTEM:
        return MemoryScope.everything()
    parsed = parse_session_key(key)
    if parsed is not None and parsed.peer_kind.lower() in GROUP_KINDS:
        return MemoryScope.conversation(key)
    return MemoryScope.everything()
