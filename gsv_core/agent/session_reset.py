"""Starting a session afresh: the history is archived and emptied, a new
session id is minted and the usage counters clear, by `/reset` or by the reset policy
when an idle session is due. The caller holds the session's lock.
"""

from __future__ import annotations

import uuid
from typing import Any

from gsv_core.agent.history import SessionHistory
from gsv_core.agent.reset_policy import is_due
from gsv_core.protocol import events
from gsv_core.protocol.messages import empty_usage


async def reset(history: SessionHistory) -> dict[str, Any]:
    """Archive and empty the history under a new session id; what was cleared."""
    record, host = history.record, history.host
    messages = list(await history.messages())
    old_id = record.session_id
    archived_to = await history.archive(messages) if messages else None
    usage, now = record.usage, host.now_ms()
    record.previous_session_ids = [*record.previous_session_ids, old_id]
    record.session_id = str(uuid.uuid4())
    record.usage = empty_usage()
    record.last_input_tokens = None
    record.last_reset_at = record.updated_at = now
    await history.replace([])
    media_deleted = await host.media.delete_session(history.key)
    result: dict[str, Any] = {
        "ok": True,
        "sessionKey": history.key,
        "oldSessionId": old_id,
        "newSessionId": record.session_id,
        "archivedMessages": len(messages),
        "tokensCleared": {
            "input": usage["input"],
            "output": usage["output"],
            "total": usage["total"],
        },
        "mediaDeleted": media_deleted,
    }
    if archived_to:
        result["archivedTo"] = archived_to
    return result


async def reset_if_due(history: SessionHistory, now: int) -> None:
    """A session due for a fresh start by its reset policy gets one before the arriving
    message is stored, so that message opens the new session; an empty one too (it gets a
    new session id, as in the original)."""
    record, host = history.record, history.host
    timezone = host.config().get("userTimezone")
    if not is_due(record.reset_policy, record.updated_at, now, timezone):
        return
    result = await reset(history)
    mode = (record.reset_policy or {}).get("mode")
    host.emit(
        events.SESSION_NOTICE,
        {
            "sessionKey": history.key,
            "kind": "reset",
            "text": f"Started a fresh session ({mode} reset policy); "
            f"{result['archivedMessages']} earlier messages were archived.",
            "details": result,
        },
    )
