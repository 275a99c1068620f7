"""Cron schedules: validation of the canonical shapes, the pure
`next_run(schedule, now_ms)` and a human description.

    {"kind": "at",    "atMs": int}                      once, at an epoch-ms instant
    {"kind": "every", "everyMs": int, "anchorMs"?: int} at anchor + k * every
    {"kind": "cron",  "expr": "m h dom mon dow", "tz"?: IANA zone (default userTimezone)}

Every next run is strictly after `now`. Fixes over the original scheduler:
* cron expressions are evaluated by cronsim: standard step syntax (`5/20` = 5, 25, 45),
  month and weekday names, and Vixie-cron DST semantics (a time skipped by a
  spring-forward runs once just after the gap, a repeated time runs once);
* anchored intervals never drift: runs stay on anchor + k * every however long a run takes.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any
from zoneinfo import ZoneInfo
from zoneinfo import ZoneInfoNotFoundError

from gsv_core.errors import InvalidParams

UTC = ZoneInfo("UTC")
KINDS = ("at", "every", "cron")
# below a minute an interval job would mostly keep the model busy
MIN_EVERY_MS = 60_000
CRON_ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
# a cron time found before `now` (a repeated DST hour) is stepped past; a few steps do
_MAX_CRON_STEPS = 8


def zone_named(name: str, field: str = "tz") -> ZoneInfo:
    """The IANA zone `name`; InvalidParams naming `field` when there is no such zone."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidParams(
            f"{field}: unknown time zone {name!r} (use an IANA name like Europe/Madrid)"
        ) from None


def lenient_zone(name: Any) -> ZoneInfo:
    """`userTimezone` as a zone: UTC when unset or unknown (a bad setting must not stop
    jobs; `config.set` validates it anyway)."""
    try:
        return ZoneInfo(name) if isinstance(name, str) and name else UTC
    except (ZoneInfoNotFoundError, ValueError):
        return UTC


def schedule_zone(schedule: Mapping[str, Any], default_tz: str) -> ZoneInfo:
    """The zone a schedule is shown (and, for cron, computed) in."""
    tz = schedule.get("tz")
    return lenient_zone(tz if isinstance(tz, str) and tz else default_tz)


# --------------------------------------------------------------------------- validation


def whole_number(value: Any, field: str, minimum: int) -> int:
    """An integer JSON number (2.0 counts) of at least `minimum`, else InvalidParams."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidParams(f"{field} must be a number")
    if value != value or value in (float("inf"), float("-inf")) or int(value) != value:
        raise InvalidParams(f"{field} must be a whole number")
    if value < minimum:
        raise InvalidParams(f"{field} must be at least {minimum}")
    return int(value)


def tag_of(raw: Any, field: str, tag: str, choices: str) -> Any:
    """The value of `tag`, the key that says which shape the object `raw` has (`choices`
    names the shapes, for the message); InvalidParams when `raw` is no object or lacks it."""
    if not isinstance(raw, Mapping):
        raise InvalidParams(f"{field} must be an object with a {tag} ({choices})")
    value = raw.get(tag)
    if value is None:
        raise InvalidParams(f"{field}.{tag} is required ({choices})")
    return value


def normalise_cron_expr(expr: Any, field: str = "schedule.expr") -> str:
    """A valid 5-field expression (or @daily-style alias), whitespace collapsed."""
    from cronsim import CronSim
    from cronsim import CronSimError

    if not isinstance(expr, str) or not expr.strip():
        raise InvalidParams(f"{field} is required: a 5-field cron expression like '0 9 * * 1-5'")
    text = " ".join(expr.split())
    text = CRON_ALIASES.get(text.lower(), text)
    fields = text.split(" ")
    if len(fields) != 5:
        raise InvalidParams(
            f"{field}: a cron expression must have exactly 5 fields "
            f"(minute hour day-of-month month day-of-week), got {len(fields)}: {expr!r}"
        )
    try:
        CronSim(text, dt.datetime(2026, 1, 1, tzinfo=UTC))
    except CronSimError as exc:
        raise InvalidParams(f"{field}: invalid cron expression {expr!r}: {exc}") from None
    return text


def normalise_schedule(raw: Any, field: str = "schedule") -> dict[str, Any]:
    """The canonical schedule in `raw` (the shapes above); InvalidParams names the field."""
    kind = tag_of(raw, field, "kind", "at, every or cron")
    if kind == "at":
        return {"kind": "at", "atMs": whole_number(raw.get("atMs"), f"{field}.atMs", 0)}
    if kind == "every":
        every = whole_number(raw.get("everyMs"), f"{field}.everyMs", MIN_EVERY_MS)
        result: dict[str, Any] = {"kind": "every", "everyMs": every}
        if raw.get("anchorMs") is not None:
            result["anchorMs"] = whole_number(raw["anchorMs"], f"{field}.anchorMs", 0)
        return result
    if kind == "cron":
        result = {"kind": "cron", "expr": normalise_cron_expr(raw.get("expr"), f"{field}.expr")}
        tz = raw.get("tz")
        if tz is not None and tz != "":
            if not isinstance(tz, str):
                raise InvalidParams(f"{field}.tz must be a time zone name")
            result["tz"] = zone_named(tz.strip(), f"{field}.tz").key
        return result
    raise InvalidParams(f"{field}.kind must be one of at, every, cron (got {kind!r})")


# --------------------------------------------------------------------------- next run


def next_run(schedule: Mapping[str, Any], now_ms: int, default_tz: str = "UTC") -> int | None:
    """The first run strictly after `now_ms` (epoch ms), None when there is none (an `at`
    time already past). Cron schedules without `tz` use `default_tz` (userTimezone)."""
    kind = schedule["kind"]
    if kind == "at":
        at: int = schedule["atMs"]
        return at if at > now_ms else None
    if kind == "every":
        return _next_every(schedule["everyMs"], schedule.get("anchorMs"), now_ms)
    return _next_cron(schedule["expr"], schedule_zone(schedule, default_tz), now_ms)


def _next_every(every: int, anchor: int | None, now_ms: int) -> int:
    if anchor is None:
        return now_ms + every
    if anchor > now_ms:
        return anchor
    return anchor + ((now_ms - anchor) // every + 1) * every


def _next_cron(expr: str, tz: ZoneInfo, now_ms: int) -> int | None:
    from cronsim import CronSim

    seconds, millis = divmod(now_ms, 1000)
    start = dt.datetime.fromtimestamp(seconds, tz).replace(microsecond=millis * 1000)
    # cronsim works on wall time: from inside a repeated hour it can answer a time in the
    # first pass of that hour, which is already past; those answers are skipped
    for _, candidate in zip(range(_MAX_CRON_STEPS), CronSim(expr, start), strict=False):
        at = int(candidate.timestamp()) * 1000
        if at > now_ms:
            return at
    return None


# --------------------------------------------------------------------------- description


def format_local(ms: int, tz: ZoneInfo) -> str:
    """`2026-02-14 09:30 CST`: an instant as wall time in `tz`."""
    return dt.datetime.fromtimestamp(ms / 1000, tz).strftime("%Y-%m-%d %H:%M %Z")


def describe_interval(ms: int) -> str:
    """`30 minutes`, `2 hours`, `1 day 6 hours`, `90 seconds`."""
    parts = []
    for unit, size in (("day", 86_400_000), ("hour", 3_600_000), ("minute", 60_000)):
        count, ms = divmod(ms, size)
        if count:
            parts.append(f"{count} {unit}{'s' if count != 1 else ''}")
    if ms:
        parts.append(f"{ms / 1000:g} seconds")
    return " ".join(parts)


def describe_schedule(schedule: Mapping[str, Any], default_tz: str = "UTC") -> str:
    """A schedule as a person reads it: `once at 2026-02-14 09:30 CST`, `every 30 minutes
    from 2026-02-14 09:00 UTC`, `cron 0 9 * * 1-5 (Europe/Madrid)`."""
    tz = schedule_zone(schedule, default_tz)
    kind = schedule.get("kind")
    if kind == "at":
        return f"once at {format_local(schedule['atMs'], tz)}"
    if kind == "every":
        text = f"every {describe_interval(schedule['everyMs'])}"
        anchor = schedule.get("anchorMs")
        return f"{text} from {format_local(anchor, tz)}" if anchor is not None else text
    return f"cron {schedule.get('expr')} ({tz.key})"
