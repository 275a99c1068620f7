"""The agent's waking window: heartbeats run only between `start` and `end` (`HH:MM`,
`end` may be `24:00`) in `activeHours.timezone`, else `userTimezone`, else UTC (not the
server's zone, which the original used).

`start < end` is the window [start, end) of one day; `start > end` crosses midnight
(22:00-06:00 is 22:00 to midnight and midnight to 06:00); `start == end` means all day
(an empty window would silently switch heartbeats off).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from zoneinfo import ZoneInfo
from zoneinfo import ZoneInfoNotFoundError

from gsv_core.errors import InvalidParams
from gsv_core.timezones import zone

MINUTES_PER_DAY = 24 * 60
_CLOCK = re.compile(r"(\d{1,2}):(\d{2})")
# names that mean "the user's zone" (the original's "user" and "local")
_USER_ZONE = {"", "user", "local"}


@dataclass(frozen=True)
class ActiveHours:
    start: int  # minutes after midnight, 0..1439
    end: int  # minutes after midnight, 0..1440
    zone: ZoneInfo

    def contains(self, now_ms: int) -> bool:
        local = dt.datetime.fromtimestamp(now_ms / 1000, self.zone)
        minute = local.hour * 60 + local.minute
        if self.start == self.end:
            return True
        if self.start < self.end:
            return self.start <= minute < self.end
        return minute >= self.start or minute < self.end


def parse_clock(text: str, field: str, *, end: bool = False) -> int:
    """`HH:MM` as minutes after midnight; `24:00` only as an end."""
    match = _CLOCK.fullmatch(text.strip())
    hours, minutes = (int(match[1]), int(match[2])) if match else (-1, -1)
    if end and (hours, minutes) == (24, 0):
        return MINUTES_PER_DAY
    if not (0 <= hours <= 23 and 0 <= minutes <= 59):
        latest = "24:00" if end else "23:59"
        raise InvalidParams(f"{field}: {text!r} is not a time of day (HH:MM, 00:00 to {latest})")
    return hours * 60 + minutes


def active_zone(name: str | None, user_timezone: str | None, field: str) -> ZoneInfo:
    """`activeHours.timezone` when set (an unknown name is an error), else the user's."""
    if name is None or name.strip().lower() in _USER_ZONE:
        return zone(user_timezone)
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidParams(
            f"{field}: unknown time zone {name!r}; use an IANA name such as Europe/Madrid"
        ) from None


def parse_active_hours(
    start: str, end: str, timezone: str | None, user_timezone: str | None, field: str
) -> ActiveHours:
    return ActiveHours(
        parse_clock(start, f"{field}.start"),
        parse_clock(end, f"{field}.end", end=True),
        active_zone(timezone, user_timezone, f"{field}.timezone"),
    )
