"""`gsv__SessionsList` and `gsv__SessionSend` (docs/tools.md#gateway-native-tools).

SessionSend waits for the reply to *its own* message (the run it started), not for
whatever assistant message is newest, and a bare key like "main" means the calling
agent's main session.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING
from typing import Any

from pydantic import Field

from gsv_core.agent.manager import SESSION_SEND_KIND
from gsv_core.agent.run import RunFailed
from gsv_core.agent.tools import ToolCallContext
from gsv_core.errors import InvalidParams
from gsv_core.gateway.native_registry import NativeArgs
from gsv_core.gateway.native_registry import NativeTool
from gsv_core.gateway.native_registry import NativeToolRegistry
from gsv_core.protocol.messages import text_of
from gsv_core.routing import canonicalize_session_key
from gsv_core.routing import main_session_key
from gsv_core.routing import validate_session_key
from gsv_core.storage.usage import is_background
from gsv_core.usage.ledger import SESSION_SEND

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway


class SessionsListArgs(NativeArgs):
    limit: int = Field(default=20, ge=1, le=100)
    offset: int = Field(default=0, ge=0)
    messageLimit: int = Field(default=0, ge=0, le=20, description="Recent messages of each.")


class SessionSendArgs(NativeArgs):
    sessionKey: str = Field(min_length=1, description='E.g. "main" or "agent:helper:main".')
    message: str = Field(min_length=1)
    waitSeconds: float = Field(default=30, ge=0, le=120, description="0: do not wait.")


def register(registry: NativeToolRegistry, gateway: Gateway) -> None:
    async def sessions_list(args: SessionsListArgs, ctx: ToolCallContext) -> dict[str, Any]:
        records, total = await gateway.sessions.store.list_sessions(args.offset, args.limit)
        sessions = []
        for record in records:
            entry = {**record.list_entry(), "label": record.label}
            if args.messageLimit:
                messages = await gateway.sessions.store.messages(
                    record.session_key, args.messageLimit
                )
                entry["messages"] = [_preview(m) for m in messages]
            sessions.append(entry)
        return {"sessions": sessions, "count": total, "offset": args.offset, "limit": args.limit}

    async def session_send(args: SessionSendArgs, ctx: ToolCallContext) -> dict[str, Any]:
        key = _target_key(gateway, args.sessionKey, ctx.agent_id)
        if key == ctx.session_key:
            raise InvalidParams(
                "gsv__SessionSend cannot message the session it runs in; answer directly instead"
            )
        actor = await gateway.sessions.actor(key, kind=SESSION_SEND_KIND)
        # work started by background work counts as background (its budget)
        background = is_background(ctx.run_source)
        source = f"{SESSION_SEND}@{ctx.run_source}" if background else SESSION_SEND
        sent = await actor.send(args.message, source=source)
        if args.waitSeconds == 0:
            return {
                "status": "accepted",
                "runId": sent.run_id,
                "sessionKey": key,
                "queued": sent.queued,
            }
        outcome = actor.run_outcome(sent.run_id)
        try:
            async with asyncio.timeout(args.waitSeconds):
                final = await asyncio.shield(outcome)
        except TimeoutError:
            return {"status": "timeout", "runId": sent.run_id, "sessionKey": key,
                    "waitedSeconds": args.waitSeconds}  # fmt: skip
        except RunFailed as exc:
            return {
                "status": "error",
                "runId": sent.run_id,
                "sessionKey": key,
                "error": exc.message,
            }
        return {"status": "ok", "runId": sent.run_id, "sessionKey": key, "reply": text_of(final)}

    registry.add(
        NativeTool(
            "gsv__SessionsList",
            "List active sessions with metadata, most recent first.",
            SessionsListArgs,
            sessions_list,
        )
    )
    registry.add(
        NativeTool(
            "gsv__SessionSend",
            "Send a message into another session and wait for its reply.",
            SessionSendArgs,
            session_send,
        )
    )


def _target_key(gateway: Gateway, raw: str, caller_agent: str) -> str:
    settings = gateway.sessions.routing()
    key = validate_session_key(raw)
    if key.lower() in ("main", settings.main_key):
        return main_session_key(caller_agent, settings)
    return canonicalize_session_key(key, settings)


def _preview(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": message.get("role"),
        "text": text_of(message)[:500],
        "timestamp": message.get("timestamp"),
    }
