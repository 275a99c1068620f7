"""Reset policies: whether a session is due for a fresh start when the next
message arrives. `daily` resets at `atHour` in the user's timezone, not the server's;
`idle` after `idleMinutes` without activity; `manual` never."""

from __future__ import annotations

import datetime as dt
from typing import Any
from zoneinfo import ZoneInfo

from gsv_core.timezones import zone

DEFAULT_AT_HOUR = 4
DEFAULT_IDLE_MINUTES = 60


def daily_boundary_ms(now_ms: int, at_hour: int, tz: ZoneInfo) -> int:
    """The most recent moment the clock showed `at_hour`:00 in `tz`, as epoch ms."""
    now = dt.datetime.fromtimestamp(now_ms / 1000, tz)
    boundary = now.replace(hour=at_hour, minute=0, second=0, microsecond=0)
    if boundary > now:
        boundary = (now - dt.timedelta(days=1)).replace(
            hour=at_hour, minute=0, second=0, microsecond=0
        )
    # fold=0 picks the first of a repeated hour; a skipped hour lands just after the gap
    return int(boundary.timestamp() * 1000)


def is_due(
    policy: dict[str, Any] | None, last_activity_ms: int, now_ms: int, timezone: str | None
) -> bool:
    """Whether a session last active at `last_activity_ms` should reset now."""
    if not policy:
        return False
    mode = policy.get("mode")
    if mode == "daily":
        at_hour = policy.get("atHour")
        hour = at_hour if isinstance(at_hour, int) and 0 <= at_hour <= 23 else DEFAULT_AT_HOUR
        return last_activity_ms < daily_boundary_ms(now_ms, hour, zone(timezone))
    if mode == "idle":
        minutes = policy.get("idleMinutes")
        # 0 is a real setting (as in the original): any idle time at all resets
        idle = minutes if isinstance(minutes, int) and minutes >= 0 else DEFAULT_IDLE_MINUTES
        return now_ms - last_activity_ms > idle * 60_000
    return False
