"""Background exec events (`node.exec.event`, docs/protocol.md#events): which session
waits for which node process, and delivery of each terminal event exactly once.

The agent registers a watch when a node tool answers `{status: "running", sessionId}`;
the node later reports `finished` / `failed` / `timed_out` and the watcher's sink gets the
event once per eventId. Events nobody watches are acknowledged with `dropped: true`.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gsv_core.protocol.schemas.nodes import NodeExecEventParams

log = logging.getLogger(__name__)

STARTED = "started"
TERMINAL = frozenset({"finished", "failed", "timed_out"})
OUTPUT_TAIL_MAX = 4000
WATCH_TTL_MS = 24 * 3600 * 1000
SEEN_KEEP = 10_000

ExecSink = Callable[[dict[str, Any]], Awaitable[None]]


@dataclass
class _Watch:
    sink: ExecSink
    call_id: str | None
    expires_at: int


class ExecEventRouter:
    def __init__(self, now_ms: Callable[[], int]) -> None:
        self._now = now_ms
        self._watches: dict[tuple[str, str], _Watch] = {}
        self._seen: OrderedDict[str, None] = OrderedDict()

    def watch(self, node_id: str, session_id: str, sink: ExecSink, call_id: str | None) -> None:
        self._gc()
        expires = self._now() + WATCH_TTL_MS
        self._watches[(node_id, session_id)] = _Watch(sink, call_id, expires)

    async def deliver(self, node_id: str, params: NodeExecEventParams) -> bool:
        """Route one event; returns True when it was dropped (invalid, unwatched, duplicate
        events are acknowledged as dropped)."""
        if not params.sessionId.strip() or (params.event not in TERMINAL | {STARTED}):
            return True
        event_id = params.eventId
        if event_id in self._seen:
            return False  # already delivered: acknowledged, not dropped
        key = (node_id, params.sessionId)
        watch = self._watches.get(key)
        if watch is None:
            return True
        if params.event == STARTED:
            watch.expires_at = self._now() + WATCH_TTL_MS
            return False
        del self._watches[key]
        self._remember(event_id)
        completion = _completion(node_id, event_id, params, watch.call_id)
        try:
            await watch.sink(completion)
        except Exception:
            log.exception("delivering exec event %s failed", event_id)
        return False

    def _remember(self, event_id: str) -> None:
        self._seen[event_id] = None
        while len(self._seen) > SEEN_KEEP:
            self._seen.popitem(last=False)

    def _gc(self) -> None:
        now = self._now()
        for key in [k for k, w in self._watches.items() if w.expires_at <= now]:
            del self._watches[key]


def _completion(
    node_id: str, event_id: str, params: NodeExecEventParams, call_id: str | None
) -> dict[str, Any]:
    tail = (params.outputTail or "").strip()[-OUTPUT_TAIL_MAX:]
    return {
        "eventId": event_id,
        "nodeId": node_id,
        "sessionId": params.sessionId,
        "callId": params.callId or call_id,
        "event": params.event,
        "exitCode": params.exitCode,
        "signal": params.signal,
        "outputTail": tail,
        "startedAt": params.startedAt,
        "endedAt": params.endedAt,
    }
