"""Spending caps: config `budget = {daily?, monthly?, background?}` in USD.

- `daily` / `monthly`: once the day's (month's) spend reaches it, no run calls the model;
  the person gets an answer that says so and how to raise it.
- `background` (per day, 1 USD on a fresh install): cron jobs, heartbeats and the sessions
  they message pause once their spend of the day reaches it; a run already going
  finishes. Interactive work is not counted against it.

Days and months start at midnight in `userTimezone`. Spend counts calls with a known
price only (an unpriced model cannot be capped: `gsv usage` shows it as unknown).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

from gsv_core.config import setting
from gsv_core.storage.usage import UsageStore
from gsv_core.storage.usage import is_background
from gsv_core.timezones import user_zone
from gsv_core.usage.spend import BACKGROUND
from gsv_core.usage.spend import DAILY
from gsv_core.usage.spend import MONTHLY
from gsv_core.usage.spend import PERIODS
from gsv_core.usage.spend import usd

RAISE = {
    DAILY: "/budget daily USD, or gsv config set budget.daily USD",
    MONTHLY: "/budget monthly USD, or gsv config set budget.monthly USD",
    BACKGROUND: "/budget background USD, or gsv config set budget.background USD",
}


def monthly_capped(config: dict[str, Any]) -> bool:
    """Whether `budget.monthly` caps spending (the ledger keeps this month's rows then)."""
    return _limit(setting(config, "budget").get(MONTHLY)) is not None


def _limit(value: Any) -> float | None:
    """None: no cap (unset, or `false`: turned off; 0 is a cap that allows nothing)."""
    return None if value is None or value is False else float(value)


@dataclass(frozen=True)
class Reached:
    """A budget that stops a run: which one, its limit and what was spent."""

    budget: str
    limit: float
    spent: float

    def message(self) -> str:
        return (
            f"The {self.budget} budget of {usd(self.limit)} is reached "
            f"({usd(self.spent)} spent {PERIODS[self.budget]}), so no model was called. "
            f"Raise it with {RAISE[self.budget]}."
        )


class Budget:
    def __init__(
        self, store: UsageStore, config: Callable[[], dict[str, Any]], now_ms: Callable[[], int]
    ) -> None:
        self._store = store
        self._config = config
        self._now_ms = now_ms

    def limits(self) -> dict[str, float | None]:
        section = setting(self._config(), "budget")
        return {name: _limit(section.get(name)) for name in (DAILY, MONTHLY, BACKGROUND)}

    async def spend(
        self, names: tuple[str, ...] = (DAILY, MONTHLY, BACKGROUND)
    ) -> dict[str, float]:
        """USD spent against the budgets `names`: today, this month, background today."""
        day, month = period_starts(self._now_ms(), user_zone(self._config()))
        since = {DAILY: day, MONTHLY: month, BACKGROUND: day}
        return {name: await self._store.spent_since(since[name], name == BACKGROUND)
                for name in names}  # fmt: skip

    async def reached(self, source: str) -> Reached | None:
        """The budget a run from `source` may not spend past now, if any."""
        limits = self.limits()
        wanted = [DAILY, MONTHLY] + ([BACKGROUND] if is_background(source) else [])
        capped = tuple(name for name in wanted if limits[name] is not None)
        spend = await self.spend(capped) if capped else {}  # no cap applies: no query
        for name in capped:
            if spend[name] >= (limit := limits[name] or 0.0):
                return Reached(name, limit, spend[name])
        return None

    async def status(self) -> dict[str, Any]:
        """Limits, spend and which budgets are reached (`gateway.status`, `/budget`)."""
        limits, spend = self.limits(), await self.spend()
        reached = [n for n, limit in limits.items() if limit is not None and spend[n] >= limit]
        return {"limits": limits, "spent": spend, "reached": reached}


def period_starts(now_ms: int, timezone: ZoneInfo) -> tuple[int, int]:
    """(today's, this month's) start, at midnight in `timezone`, as epoch ms."""
    now = dt.datetime.fromtimestamp(now_ms / 1000, timezone)
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    return int(day.timestamp() * 1000), int(day.replace(day=1).timestamp() * 1000)
