"""The ways people write a time or an interval, turned into epoch milliseconds
(the schedule normalisation behind `gsv__Cron`). Our own small parser (dateparser is
11 MB and slow to start).

`parse_when(text, now_ms, tz)` understands

    1771061400 / 1771061400000        epoch seconds (10 digits) / milliseconds (11-16)
    now, in 2 hours, in 30 minutes, in 1h30m, +45m
    today 18:00, tomorrow 9am, tomorrow at 9:15 pm, 9:30pm (the next such time)
    2026-02-14T09:30:00Z, 2026-02-14 09:30+01:00, 2026-02-14 09:30 UTC   absolute
    2026-02-14 09:30, 2026-02-14T9, 2026-02-14                            wall time in `tz`

Relative durations are added to the instant (UTC arithmetic), so "in 24 hours" is always
24 real hours, also across a DST change; "tomorrow 9am" is 9:00 on tomorrow's calendar in
`tz`. A wall time that a DST gap skips is an error; a repeated one means its first pass.
Errors are ValueError with a message for a person; callers name the field.
"""

from __future__ import annotations

import datetime as dt
import re
from zoneinfo import ZoneInfo

UTC = dt.UTC

_UNITS = {
    "ms": 1,
    "millisecond": 1,
    "milliseconds": 1,
    "s": 1000,
    "sec": 1000,
    "secs": 1000,
    "second": 1000,
    "seconds": 1000,
    "m": 60_000,
    "min": 60_000,
    "mins": 60_000,
    "minute": 60_000,
    "minutes": 60_000,
    "h": 3_600_000,
    "hr": 3_600_000,
    "hrs": 3_600_000,
    "hour": 3_600_000,
    "hours": 3_600_000,
    "d": 86_400_000,
    "day": 86_400_000,
    "days": 86_400_000,
    "w": 604_800_000,
    "week": 604_800_000,
    "weeks": 604_800_000,
}
_UNIT_NAMES = "|".join(sorted(_UNITS, key=len, reverse=True))
_PART = re.compile(rf"(\d+(?:\.\d+)?)\s*({_UNIT_NAMES})(?![a-z])")
_SEPARATOR = re.compile(r"[\s,]*(?:and\s+)?")
_RELATIVE = re.compile(r"(?:in\s+|\+\s*)(.+)")
_CLOCK = r"(\d{1,2})(?::(\d{2}))?\s*(am|pm)?"
_DAY_TIME = re.compile(rf"(today|tomorrow)(?:\s+at)?\s+{_CLOCK}")
_BARE_TIME = re.compile(rf"(?:at\s+)?{_CLOCK}")
_LOCAL = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{1,2})(?::(\d{2})(?::(\d{2})(?:\.\d+)?)?)?)?"
)
_ZONE_WORD = re.compile(r"\s*(?:utc|gmt)$")
_HINT = (
    "use an ISO time (2026-02-14 09:30, 2026-02-14T09:30:00Z), 'in 2 hours', "
    "'today 18:00', 'tomorrow 9am' or epoch seconds/milliseconds"
)


def parse_duration(text: str) -> int:
    """`30m`, `2h`, `1d`, `1h30m`, `90 minutes`, `1.5 hours` -> milliseconds (> 0)."""
    source = text.strip().lower()
    position, total = 0, 0.0
    while position < len(source):
        position = _SEPARATOR.match(source, position).end()  # type: ignore[union-attr]
        if position >= len(source):
            break
        part = _PART.match(source, position)
        if part is None:
            raise ValueError(
                f"cannot read {text!r} as a duration: use forms like 30m, 2h, 1d, 1h30m"
            )
        total += float(part.group(1)) * _UNITS[part.group(2)]
        position = part.end()
    if total <= 0:
        raise ValueError(f"the duration {text!r} must be longer than zero")
    return round(total)


def parse_when(text: str, now_ms: int, tz: ZoneInfo) -> int:
    """The instant `text` names, as epoch ms (see the module docstring for the forms)."""
    source = " ".join(text.strip().lower().split())
    if not source:
        raise ValueError(f"an empty time: {_HINT}")
    if source.isdigit():
        return _epoch(source, text)
    if source == "now":
        return now_ms
    for parse in (_relative, _day_time, _bare_time, _local, _absolute):
        found = parse(source, now_ms, tz)
        if found is not None:
            return found
    raise ValueError(f"unable to parse datetime {text!r}: {_HINT}")


def _epoch(digits: str, text: str) -> int:
    if len(digits) == 10:
        return int(digits) * 1000
    if 11 <= len(digits) <= 16:
        return int(digits)
    raise ValueError(f"unable to parse datetime {text!r}: {_HINT}")


def _relative(source: str, now_ms: int, tz: ZoneInfo) -> int | None:
    match = _RELATIVE.fullmatch(source)
    if match is None:
        return None
    return now_ms + parse_duration(match.group(1))


def _day_time(source: str, now_ms: int, tz: ZoneInfo) -> int | None:
    match = _DAY_TIME.fullmatch(source)
    if match is None:
        return None
    hour, minute = _clock(match.group(2), match.group(3), match.group(4))
    day = _local_date(now_ms, tz) + dt.timedelta(days=1 if match.group(1) == "tomorrow" else 0)
    return wall_time_ms(dt.datetime.combine(day, dt.time(hour, minute)), tz)


def _bare_time(source: str, now_ms: int, tz: ZoneInfo) -> int | None:
    """`9am`, `at 18:30`: the next time the clock shows it (today, else tomorrow)."""
    match = _BARE_TIME.fullmatch(source)
    if match is None or (match.group(2) is None and match.group(3) is None):
        return None  # a bare number is not a time of day
    hour, minute = _clock(match.group(1), match.group(2), match.group(3))
    today = _local_date(now_ms, tz)
    for day in (today, today + dt.timedelta(days=1)):
        at = wall_time_ms(dt.datetime.combine(day, dt.time(hour, minute)), tz)
        if at > now_ms:
            return at
    return None


def _local(source: str, now_ms: int, tz: ZoneInfo) -> int | None:
    match = _LOCAL.fullmatch(source)
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(g) if g else 0 for g in match.groups())
    try:
        local = dt.datetime(year, month, day, hour, minute, second)
    except ValueError as exc:
        raise ValueError(f"invalid date or time {source!r}: {exc}") from None
    return wall_time_ms(local, tz)


def _absolute(source: str, now_ms: int, tz: ZoneInfo) -> int | None:
    """An ISO time with its own offset (`Z`, `+01:00`, `+0100`) or a UTC/GMT suffix."""
    text, named_utc = _ZONE_WORD.sub("", source), bool(_ZONE_WORD.search(source))
    try:
        moment = dt.datetime.fromisoformat(text.upper())
    except ValueError:
        return None
    if moment.tzinfo is None:
        if not named_utc:
            return wall_time_ms(moment, tz)
        moment = moment.replace(tzinfo=UTC)
    return round(moment.timestamp() * 1000)


def _clock(hour_text: str, minute_text: str | None, meridiem: str | None) -> tuple[int, int]:
    hour, minute = int(hour_text), int(minute_text or 0)
    if meridiem:
        if not 1 <= hour <= 12:
            raise ValueError(f"{hour}{meridiem}: with am/pm the hour must be 1-12")
        hour = hour % 12 + (12 if meridiem == "pm" else 0)
    if hour > 23 or minute > 59:
        raise ValueError(f"{hour_text}:{minute_text or '00'} is not a time of day")
    return hour, minute


def _local_date(now_ms: int, tz: ZoneInfo) -> dt.date:
    return dt.datetime.fromtimestamp(now_ms / 1000, tz).date()


def wall_time_ms(local: dt.datetime, tz: ZoneInfo) -> int:
    """A naive wall time in `tz` as epoch ms; ValueError when a DST gap skips it. In a
    repeated hour the first pass counts (fold=0)."""
    aware = local.replace(tzinfo=tz, fold=0)
    back = aware.astimezone(UTC).astimezone(tz)
    if back.replace(tzinfo=None) != local:
        raise ValueError(
            f"{local:%Y-%m-%d %H:%M} does not exist in {tz.key}: the clocks skip it (DST)"
        )
    return round(aware.timestamp() * 1000)
