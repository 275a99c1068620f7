"""The usage ledger: every model call the agent makes, with its tokens, cost and source.

Sources: `chat` (a client), `channel:<name>` (a messenger), `cron:<job name>`,
`heartbeat`, `sessionSend` (one session writing to another), `compaction` and `memory`
(the embeddings of semantic memory search, provider `embeddings`). A call is
recorded after it answered; recording never fails the run (a storage error is logged).
Rows older than `usage.retentionDays` are pruned at start and then once a day, except,
while `budget.monthly` is set, this month's: the monthly budget counts them.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gsv_core.config import setting
from gsv_core.protocol.messages import Usage
from gsv_core.storage.usage import DAY_MS
from gsv_core.storage.usage import ON_BEHALF
from gsv_core.storage.usage import UsageRow
from gsv_core.storage.usage import UsageStore
from gsv_core.storage.usage import insert_row
from gsv_core.storage.usage import is_background
from gsv_core.timezones import user_zone
from gsv_core.usage.budget import monthly_capped
from gsv_core.usage.budget import period_starts
from gsv_core.usage.prices import cost_of

log = logging.getLogger(__name__)

CHAT = "chat"
HEARTBEAT = "heartbeat"
SESSION_SEND = "sessionSend"
COMPACTION = "compaction"
MEMORY = "memory"
EMBEDDINGS = "embeddings"  # the provider name of a memory embeddings call


def embeddings_call(agent_id: str, model: str, tokens: int) -> ModelCall:
    """An embeddings call of memory search: input tokens only."""
    usage: Usage = {"input": tokens, "output": 0, "total": tokens}
    return ModelCall(agent_id, "", MEMORY, EMBEDDINGS, model, usage)


def compaction_source(run_source: str) -> str:
    """Compaction inside a background run is that run's spending (`compaction@<source>`),
    so the background budget counts it; elsewhere it is plain `compaction`."""
    return ON_BEHALF + run_source if is_background(run_source) else COMPACTION


def run_source(context: dict[str, Any] | None) -> str:
    """Where a run came from, read from its context (cron job, channel, or a client)."""
    if not context:
        return CHAT
    cron = context.get("cron")
    if isinstance(cron, dict):
        return cron_source(str(cron.get("jobName") or cron.get("jobId")))
    if context.get("channel"):
        return f"channel:{context['channel']}"
    return CHAT


def cron_source(job_name: str) -> str:
    return f"cron:{job_name}"


@dataclass(frozen=True)
class ModelCall:
    agent_id: str
    session_key: str
    source: str
    provider: str
    model: str
    usage: Usage


class UsageLedger:
    def __init__(
        self,
        store: UsageStore,
        config: Callable[[], dict[str, Any]],
        now_ms: Callable[[], int],
    ) -> None:
        self.store = store
        self._config = config
        self._now_ms = now_ms
        self._pruned_at: int | None = None

    async def record(self, call: ModelCall) -> None:
        try:
            await self.store.add(self._row(call))
        except Exception:  # the answer is already out: a lost row must not fail the run
            log.exception("could not record the usage of a %s/%s call", call.provider, call.model)
        await self.prune_if_due()

    def writer(self, call: ModelCall) -> Callable[[sqlite3.Connection], None]:
        """The ledger row of `call` as a write to run in the transaction that stores the
        reply reporting it (one commit for both); its failure is logged and rolled back
        alone, never failing that transaction. Call `prune_if_due` after."""
        row = self._row(call)

        def write(conn: sqlite3.Connection) -> None:
            conn.execute("SAVEPOINT usage_row")
            try:
                insert_row(conn, row)
            except sqlite3.Error:
                conn.execute("ROLLBACK TO usage_row")
                log.exception("could not record the usage of a %s/%s call", row.provider, row.model)
            conn.execute("RELEASE usage_row")

        return write

    async def prune_if_due(self) -> None:
        """Prune at start and then once a day (a failure is logged)."""
        if self._pruned_at is not None and self._now_ms() - self._pruned_at < DAY_MS:
            return
        try:
            await self.prune()
        except Exception:
            log.exception("could not prune the usage ledger")

    def _row(self, call: ModelCall) -> UsageRow:
        usage = call.usage
        return UsageRow(
            at=self._now_ms(), agent_id=call.agent_id, session_key=call.session_key,
            source=call.source, provider=call.provider, model=call.model,
            input=usage.get("input", 0), output=usage.get("output", 0),
            cache_read=usage.get("cacheRead", 0), cache_write=usage.get("cacheWrite", 0),
            cost=cost_of(call.model, usage, self._config()),
        )  # fmt: skip

    async def prune(self) -> int:
        now = self._now_ms()
        self._pruned_at = now
        config = self._config()
        before = now - int(setting(config, "usage.retentionDays")) * DAY_MS
        if monthly_capped(config):  # forgetting this month's spend would lift the cap
            before = min(before, period_starts(now, user_zone(config))[1])
        return await self.store.prune(before)

    async def report(self, since: int, until: int, group: str) -> dict[str, Any]:
        groups = await self.store.summary(since, until, group)
        return {"since": since, "until": until, "groupBy": group, "groups": groups,
                "count": len(groups), "total": _total(groups)}  # fmt: skip


def _total(groups: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("calls", "input", "output", "cacheRead", "cacheWrite", "unpricedCalls")
    total: dict[str, Any] = {key: sum(g[key] for g in groups) for key in keys}
    costs = [g["costUsd"] for g in groups if g["costUsd"] is not None]
    total["costUsd"] = round(sum(costs), 6) if costs else (0.0 if not groups else None)
    return total
