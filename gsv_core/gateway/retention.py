"""Retention: one gateway-wide sweep that forgets what is past its retention setting, at
start and then every hour, so a gateway that runs for months without a restart (and
without traffic that would prune as it writes) keeps each table within its setting.

Swept (docs/architecture.md, Retention, lists what is kept and why):

- `usageRows`: the usage ledger, older than `usage.retentionDays`;
- `inboundMessages`: answered or dropped channel messages, older than
  `channels.journalRetentionDays`;
- `pairingRequests`: pairing requests older than the pairing TTL;
- `joinCodes`: join codes past their expiry, used or not;
- `sessionActors`: in memory only, the actors of one-off sessions (cron task runs,
  sub-agents) idle for ten minutes (agent/manager.py `drop_idle`; the sessions stay);
- `oneOffSessions`: the sessions of cron task runs and sub-agents nobody touched for
  `session.oneOffRetentionDays`, with their messages, index rows and media
  (agent/manager.py `delete_stale`).

One step that fails is logged and the others still run; the next sweep tries again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from collections.abc import Callable

from gsv_core.timer import MAX_SLEEP_SECONDS
from gsv_core.timer import Timer

log = logging.getLogger(__name__)

SWEEP_EVERY_MS = 3_600_000

# one sweep step: removes what is past its retention, returns how many it removed
Step = Callable[[], Awaitable[int]]


class RetentionService:
    """Runs `sweep()` at start and then every SWEEP_EVERY_MS of the gateway's clock over
    the steps the composition root gives it (gateway/app.py `retention_steps`)."""

    def __init__(self, now_ms: Callable[[], int], steps: dict[str, Step]) -> None:
        self._now_ms = now_ms
        self._steps = steps
        self._timer = Timer("retention", self._tick)
        self._swept_at: int | None = None
        self._sweeping: asyncio.Task[dict[str, int]] | None = None
        self.last: dict[str, int] = {}  # what the last sweep removed, by kind

    def start(self) -> None:
        self._timer.start()

    def wake(self) -> None:
        """Look again now whether a sweep is due (the clock moved)."""
        self._timer.wake()

    async def stop(self) -> None:
        await self._timer.stop([self._sweeping] if self._sweeping is not None else [])

    def _tick(self) -> float:
        now = self._now_ms()
        due = self._swept_at is None or now - self._swept_at >= SWEEP_EVERY_MS
        if due and (self._sweeping is None or self._sweeping.done()):
            self._swept_at = now
            self._sweeping = asyncio.create_task(self.sweep(), name="gsv-retention-sweep")
        return MAX_SLEEP_SECONDS

    async def sweep(self) -> dict[str, int]:
        """One pass over every kept kind; how many of each were removed."""
        removed: dict[str, int] = {}
        for kind, step in self._steps.items():
            try:
                removed[kind] = await step()
            except Exception:  # one table's trouble must not keep the others unswept
                log.exception("retention sweep of %s failed", kind)
        if any(removed.values()):
            log.info("retention sweep removed %s", removed)
        self.last = removed
        return removed
