"""A session's stored messages: the history as loaded on first use and cached, appends
that reach the disk before anyone hears of them, whole-history replacement and archives.

It takes no lock: the session actor that owns it serialises every call. The cache may be
released (`release()`) while the actor is idle: the store is the truth (every change
reaches it before the cached list), so the next use reloads the same history.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from gsv_core.agent.host import AgentHost
from gsv_core.agent.tools import error_result
from gsv_core.protocol.messages import Usage
from gsv_core.protocol.messages import add_usage
from gsv_core.protocol.messages import tool_calls
from gsv_core.storage.sessions import SessionRecord
from gsv_core.storage.sessions import SessionStore

log = logging.getLogger(__name__)


class SessionHistory:
    def __init__(
        self,
        record: SessionRecord,
        store: SessionStore,
        host: AgentHost,
        on_load: Callable[[], None] | None = None,
        *,
        fresh: bool = False,
    ) -> None:
        self.record = record
        self.store = store
        self.host = host
        # a session not stored yet has no messages: nothing to read (a crowd of first
        # messages each spared a read before its ack)
        self._messages: list[dict[str, Any]] | None = [] if fresh else None
        self._on_load = on_load  # told after each load (the manager bounds what is held)

    @property
    def key(self) -> str:
        return self.record.session_key

    async def messages(self) -> list[dict[str, Any]]:
        """The history (loaded on first use; the cached list is the one callers extend)."""
        messages = self._messages
        if messages is None:
            messages = self._messages = await self.store.messages(self.key)
            if self._on_load is not None:
                self._on_load()
        return messages

    @property
    def cached(self) -> list[dict[str, Any]] | None:
        """The history if it is in memory now (None: `messages()` would read the store)."""
        return self._messages

    def release(self) -> None:
        """Drop the cached history (the owner checked nobody is using it)."""
        self._messages = None

    async def persist(
        self,
        messages: Sequence[Mapping[str, Any]],
        usage: Usage | None = None,
        also: Callable[[Any], None] | None = None,
    ) -> None:
        """Append messages of the current run (stored before anyone is told about them);
        `also` is a write in the same transaction (SessionStore.append): the reply's
        usage-ledger row."""
        stored = [dict(message) for message in messages]
        history = await self.messages()
        self.record.updated_at = self.host.now_ms()
        if usage is not None:
            self.record.usage = add_usage(self.record.usage, usage)
            if usage["input"] > 0:
                self.record.last_input_tokens = usage["input"]
        await self.store.append(self.record, stored, also)
        history.extend(stored)

    async def replace(self, kept: list[dict[str, Any]]) -> None:
        """Store `kept` as the whole history (after a reset or a compaction)."""
        await self.store.replace_history(self.record, kept)
        self._messages = list(kept)

    def dangling_results(self, note: str) -> list[dict[str, Any]]:
        """Error results for tool calls of the last reply that never got one (a stopped or
        interrupted run), so the history stays valid for every provider."""
        history = self._messages or []
        answered = {m.get("toolCallId") for m in history if m.get("role") == "toolResult"}
        for message in reversed(history):
            if message.get("role") == "assistant":
                now = self.host.now_ms()
                return [
                    dict(error_result(call["id"], call["name"], note, now))
                    for call in tool_calls(message)
                    if call["id"] not in answered
                ]
            if message.get("role") == "user":
                break
        return []

    async def archive(self, messages: list[dict[str, Any]], suffix: str = "") -> str | None:
        """Archive messages of this session in the workspace; None if that failed (logged:
        a reset must not fail because the disk is full)."""
        record = self.record
        meta = {
            "sessionKey": self.key,
            "sessionId": record.session_id,
            "agentId": record.agent_id,
            "messageCount": len(messages),
            "usage": record.usage,
            "archivedAt": self.host.now_ms(),
        }
        try:
            return await self.host.archive(
                record.agent_id, f"{record.session_id}{suffix}", messages, meta
            )
        except OSError:
            log.exception("archiving %s failed", self.key)
            return None
