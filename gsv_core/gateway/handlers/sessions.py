"""Session methods (docs/protocol.md#methods): list, get, stats, patch, reset, compact, history,
preview. Keys are validated (400) and canonicalised; a key never used before reports a
fresh, empty session under its real key without storing anything. The reads (get, stats,
history, preview) neither load nor create the session's actor: a script may read many
keys without the gateway keeping anything of them."""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from gsv_core.agent.model_choice import next_model
from gsv_core.agent.session import SessionActor
from gsv_core.gateway.handlers.routes import Routes
from gsv_core.protocol import methods as m
from gsv_core.protocol.schemas.sessions import SessionCompactParams
from gsv_core.protocol.schemas.sessions import SessionKeyParams
from gsv_core.protocol.schemas.sessions import SessionPatchParams
from gsv_core.protocol.schemas.sessions import SessionPreviewParams
from gsv_core.protocol.schemas.sessions import SessionsListParams
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router
from gsv_core.storage.sessions import SessionRecord

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway


def _tokens(record: SessionRecord) -> dict[str, int]:
    usage = record.usage
    return {"input": usage["input"], "output": usage["output"], "total": usage["total"]}


def register(router: Router, gateway: Gateway) -> None:
    route = Routes(router)
    sessions = gateway.sessions

    async def actor_for(raw: str) -> SessionActor:
        return await sessions.actor(sessions.canonical(raw))

    async def record_for(raw: str) -> SessionRecord:
        return await sessions.record_for_reading(sessions.canonical(raw))

    @route(m.SESSIONS_LIST, SessionsListParams)
    async def sessions_list(ctx: RequestContext, params: SessionsListParams) -> dict[str, Any]:
        records, total = await sessions.store.list_sessions(params.offset, params.limit)
        counts = await sessions.store.message_counts([r.session_key for r in records])
        entries = []
        for record in records:
            entry = {**record.list_entry(), "messageCount": counts.get(record.session_key, 0)}
            if record.label:
                entry["label"] = record.label
            entries.append(entry)
        return {"sessions": entries, "count": total}

    @route(m.SESSION_GET, SessionKeyParams)
    async def session_get(ctx: RequestContext, params: SessionKeyParams) -> dict[str, Any]:
        record = await record_for(params.sessionKey)
        result: dict[str, Any] = {
            "sessionId": record.session_id,
            "sessionKey": record.session_key,
            "kind": record.kind,
            "createdAt": record.created_at,
            "updatedAt": record.updated_at,
            "messageCount": await sessions.message_count(record.session_key),
            "tokens": _tokens(record),
            "settings": record.settings,
            # what the next message runs on (session, agent and config settings resolved)
            "effectiveModel": dict(
                zip(("provider", "id"), next_model(record, sessions.host.config()), strict=True)
            ),
            "previousSessionIds": record.previous_session_ids,
        }
        optional = {
            "resetPolicy": record.reset_policy,
            "lastResetAt": record.last_reset_at,
            "label": record.label,
        }
        result.update({k: v for k, v in optional.items() if v is not None})
        return result

    async def counted(record: SessionRecord) -> dict[str, Any]:
        """Which session, and how many messages it holds (stats and preview open so)."""
        key = record.session_key
        count = await sessions.message_count(key)
        return {"sessionKey": key, "sessionId": record.session_id, "messageCount": count}

    @route(m.SESSION_STATS, SessionKeyParams)
    async def session_stats(ctx: RequestContext, params: SessionKeyParams) -> dict[str, Any]:
        record = await record_for(params.sessionKey)
        key = record.session_key
        return {
            **await counted(record),
            "tokens": _tokens(record),
            "createdAt": record.created_at,
            "updatedAt": record.updated_at,
            "uptime": max(0, gateway.now_ms() - record.created_at),
            "isProcessing": sessions.processing(key),
            "queueSize": await sessions.queue_size(key),
        }

    @route(m.SESSION_PATCH, SessionPatchParams)
    async def session_patch(ctx: RequestContext, params: SessionPatchParams) -> dict[str, Any]:
        actor = await actor_for(params.sessionKey)
        settings = params.settings.to_wire() if params.settings else None
        policy = params.resetPolicy.to_wire() if params.resetPolicy else None
        await actor.patch(settings=settings, label=params.label, reset_policy=policy)
        return {"ok": True}

    @route(m.SESSION_RESET, SessionKeyParams)
    async def session_reset(ctx: RequestContext, params: SessionKeyParams) -> dict[str, Any]:
        return await (await actor_for(params.sessionKey)).reset()

    @route(m.SESSION_COMPACT, SessionCompactParams)
    async def session_compact(ctx: RequestContext, params: SessionCompactParams) -> dict[str, Any]:
        return await (await actor_for(params.sessionKey)).compact(params.keepMessages)

    @route(m.SESSION_HISTORY, SessionKeyParams)
    async def session_history(ctx: RequestContext, params: SessionKeyParams) -> dict[str, Any]:
        record = await record_for(params.sessionKey)
        return {
            "sessionKey": record.session_key,
            "currentSessionId": record.session_id,
            "previousSessionIds": record.previous_session_ids,
        }

    @route(m.SESSION_PREVIEW, SessionPreviewParams)
    async def session_preview(ctx: RequestContext, params: SessionPreviewParams) -> dict[str, Any]:
        record = await record_for(params.sessionKey)
        messages = await sessions.messages(record.session_key, params.limit)
        return {**await counted(record), "messages": messages}
