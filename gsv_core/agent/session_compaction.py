"""Shortening a session's history: `/compact` keeps the last N messages, and automatic
compaction summarises the older part when the next request would not fit the model's
window. Both archive what leaves the history, so nothing is lost.

The caller holds the session's lock or is its one run (the only writer meanwhile).
"""

from __future__ import annotations

import logging
from typing import Any

from gsv_core.agent.compaction import CompactionNote
from gsv_core.agent.compaction import Summary
from gsv_core.agent.compaction import compaction_cut
from gsv_core.agent.compaction import message_cut
from gsv_core.agent.compaction import summarise
from gsv_core.agent.compaction import summary_message
from gsv_core.agent.compaction import within_window
from gsv_core.agent.history import SessionHistory
from gsv_core.agent.oversized import message_limit
from gsv_core.config import setting
from gsv_core.protocol import events
from gsv_core.protocol.messages import add_usage
from gsv_core.providers.base import Provider
from gsv_core.routing import parse_session_key
from gsv_core.usage.ledger import ModelCall
from gsv_core.usage.ledger import compaction_source

log = logging.getLogger(__name__)


async def compact(history: SessionHistory, keep: int) -> dict[str, Any]:
    """Keep the last `keep` messages, archiving the rest. The cut never
    separates a tool call from its result."""
    messages = await history.messages()
    cut = message_cut(messages, keep)
    if cut == 0:
        return {"ok": True, "trimmedMessages": 0, "keptMessages": len(messages)}
    removed, kept = messages[:cut], messages[cut:]
    archived_to = await history.archive(removed, f"-part{history.host.now_ms()}")
    history.record.updated_at = history.host.now_ms()
    await history.replace(kept)
    result: dict[str, Any] = {"ok": True, "trimmedMessages": cut, "keptMessages": len(kept)}
    if archived_to:
        result["archivedTo"] = archived_to
    return result


async def auto_compact(
    history: SessionHistory, provider: Provider, model: str, window: int, run_source: str
) -> dict[str, Any] | None:
    """Summarise the older part of the history into a summary message; None when there
    is nothing to summarise."""
    host, record = history.host, history.record
    config = host.config()
    messages = await history.messages()
    # a message too big for the window counts as what the model is sent of it
    reserve = within_window(int(setting(config, "compaction.reserveTokens")), window)
    cap = message_limit(window, reserve)
    keep = within_window(int(setting(config, "compaction.keepRecentTokens")), window)
    cut = compaction_cut(messages, keep, cap)
    if cut == 0:
        return None
    removed = messages[:cut]
    archived_to = await history.archive(removed, f"-part{host.now_ms()}")
    summary = await summarise(provider, model, removed, window)
    noted = None
    if setting(config, "compaction.extractMemories") and _notes_may_hold(history.key):
        noted = await _note(history, summary, len(removed), archived_to)
    now = host.now_ms()
    kept = [summary_message(summary.text, len(removed), archived_to, now), *messages[cut:]]
    record.usage = add_usage(record.usage, summary.usage)
    if summary.usage["total"]:
        call = ModelCall(record.agent_id, history.key, compaction_source(run_source),
                         provider.name, model, summary.usage)  # fmt: skip
        await host.record_usage(call)
    record.compaction_count += 1
    record.last_compacted_at = record.updated_at = now
    record.last_input_tokens = None  # the next request's size is unknown again
    await history.replace(kept)
    details = {
        "compactedMessages": len(removed),
        "keptMessages": len(kept) - 1,
        "archivedTo": archived_to,
        "tier": summary.tier,
        "usage": summary.usage,
    }
    text = f"Compacted {len(removed)} earlier messages into a summary "
    text += f"(the originals are archived at {archived_to})."
    if noted:
        details["notedIn"] = noted
        text += f" The summary and a link to the transcript were written to {noted}."
    host.emit(
        events.SESSION_NOTICE,
        {"sessionKey": history.key, "kind": "compaction", "details": details, "text": text},
    )
    return details


async def _note(
    history: SessionHistory, summary: Summary, compacted: int, archived_to: str | None
) -> str | None:
    """Write the summary to the daily memory file before the history is replaced; None
    (logged) when the disk refused: the archive already holds every message."""
    agent_id = history.record.agent_id
    note = CompactionNote(history.key, summary.text, summary.memories, compacted,
                          _agent_path(agent_id, archived_to))  # fmt: skip
    try:
        return await history.host.remember(agent_id, note)
    except OSError:
        log.exception("writing the compaction note of %s failed", history.key)
        return None


def _notes_may_hold(key: str) -> bool:
    """Whether a compaction of session `key` is written to the agent's notes. Not a
    messenger conversation's (a per-peer DM, a group): it may hold a stranger's words,
    and the daily notes reach the main session's prompt every turn. Its archive stays
    searchable by the owner and by that conversation (docs/memory.md#at-compaction)."""
    return parse_session_key(key) is None


def _agent_path(agent_id: str, archived_to: str | None) -> str | None:
    """An archive's workspace key (agents/<id>/sessions/...) as a path in the agent's
    folder, the way the memory index and the agent's tools name it."""
    if archived_to is None:
        return None
    return archived_to.removeprefix(f"agents/{agent_id}/")
