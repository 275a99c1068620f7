"""The user's timezone (`userTimezone`), resolved once for every part that shows or
computes local times: envelopes, reset policies, daily memory, cron, active hours."""

from __future__ import annotations

from zoneinfo import ZoneInfo
from zoneinfo import ZoneInfoNotFoundError

UTC = ZoneInfo("UTC")


def zone(name: str | None) -> ZoneInfo:
    """The zone called `name`; UTC when it is empty or unknown (never an error: a bad
    setting must not stop messages)."""
    try:
        return ZoneInfo(name) if name else UTC
    except (ZoneInfoNotFoundError, ValueError):
        return UTC


def user_zone(config: dict[str, object]) -> ZoneInfo:
    value = config.get("userTimezone")
    return zone(value if isinstance(value, str) else None)
