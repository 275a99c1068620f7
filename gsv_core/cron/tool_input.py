"""The schedule forms `gsv__Cron` accepts (docs/tools.md#gateway-native-tools)
turned into canonical schedules. Models write times the way
people do, so besides the canonical fields this takes:

* at:    `at` / `when` / `atIso` (any `parse_when` text or an epoch number), `in` ("30
         minutes"), `inMs` / `delayMs` / `inSeconds` / `inMinutes` / `inHours` / `inDays`
* every: `everyMs` / `everySeconds` / `everyMinutes` / `everyHours` / `everyDays`, or
         `every` ("30m"); anchor `anchorMs` or `anchor` / `anchorAt` / `startAt` (a time)
* cron:  `expr`, `tz` (default: userTimezone, filled in)
* a bare string: "every 2h", a 5-field expression, or a time ("tomorrow 9am").

A missing kind is inferred from the fields; times without a zone are in userTimezone.
The `cron.add` / `cron.update` RPCs take canonical schedules only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gsv_core.cron.phrases import parse_duration
from gsv_core.cron.phrases import parse_when
from gsv_core.cron.schedule import CRON_ALIASES
from gsv_core.cron.schedule import lenient_zone
from gsv_core.cron.schedule import normalise_schedule
from gsv_core.cron.schedule import whole_number
from gsv_core.errors import InvalidParams

_IN_FIELDS = {
    "inMs": 1,
    "delayMs": 1,
    "inSeconds": 1000,
    "inMinutes": 60_000,
    "inHours": 3_600_000,
    "inDays": 86_400_000,
}
_EVERY_FIELDS = {
    "everyMs": 1,
    "everySeconds": 1000,
    "everyMinutes": 60_000,
    "everyHours": 3_600_000,
    "everyDays": 86_400_000,
}
_AT_TEXT_FIELDS = ("at", "when", "atIso")
_ANCHOR_TEXT_FIELDS = ("anchor", "anchorAt", "startAt")


def tool_job(raw: Any, now_ms: int, tz_name: str) -> dict[str, Any]:
    """A CronJobCreate document with its schedule made canonical."""
    if not isinstance(raw, Mapping):
        raise InvalidParams("job must be an object with name, schedule and spec")
    doc = dict(raw)
    if "schedule" not in doc:
        raise InvalidParams("job.schedule is required")
    doc["schedule"] = tool_schedule(doc["schedule"], now_ms, tz_name)
    return doc


def tool_patch(raw: Any, now_ms: int, tz_name: str) -> dict[str, Any]:
    """A CronJobPatch with its schedule (if any) made canonical."""
    if not isinstance(raw, Mapping):
        raise InvalidParams("patch must be an object")
    patch = dict(raw)
    if patch.get("schedule") is not None:
        patch["schedule"] = tool_schedule(patch["schedule"], now_ms, tz_name, "patch.schedule")
    return patch


def tool_schedule(raw: Any, now_ms: int, tz_name: str, where: str = "schedule") -> dict[str, Any]:
    """The canonical schedule for any accepted form; InvalidParams names the field."""
    if isinstance(raw, str):
        return _from_text(raw, now_ms, tz_name, where)
    if not isinstance(raw, Mapping):
        raise InvalidParams(f"{where} must be an object with a kind (at, every or cron)")
    kind = raw.get("kind") or _inferred_kind(raw)
    if kind == "at":
        return {"kind": "at", "atMs": _at(raw, now_ms, tz_name, where)}
    if kind == "every":
        return _every(raw, now_ms, tz_name, where)
    if kind == "cron":
        tz = raw.get("tz") or tz_name
        return normalise_schedule({"kind": "cron", "expr": raw.get("expr"), "tz": tz}, where)
    if kind is None:
        raise InvalidParams(f"{where}.kind is required (at, every or cron)")
    return normalise_schedule(raw, where)  # names the bad kind


def _inferred_kind(raw: Mapping[str, Any]) -> str | None:
    if "expr" in raw:
        return "cron"
    if "every" in raw or any(key in raw for key in _EVERY_FIELDS):
        return "every"
    at_keys = ("atMs", "in", *_IN_FIELDS, *_AT_TEXT_FIELDS)
    return "at" if any(key in raw for key in at_keys) else None


def _from_text(text: str, now_ms: int, tz_name: str, where: str) -> dict[str, Any]:
    words = text.strip()
    if words.lower().startswith("every "):
        return _every({"every": words[6:]}, now_ms, tz_name, where)
    if len(words.split()) == 5 or words.lower() in CRON_ALIASES:
        return normalise_schedule({"kind": "cron", "expr": words, "tz": tz_name}, where)
    return {"kind": "at", "atMs": _when(words, now_ms, tz_name, where)}


def _at(raw: Mapping[str, Any], now_ms: int, tz_name: str, where: str) -> int:
    if raw.get("atMs") is not None:
        return whole_number(raw["atMs"], f"{where}.atMs", 0)
    for key, unit in _IN_FIELDS.items():
        if raw.get(key) is not None:
            delay = raw[key]
            if isinstance(delay, bool) or not isinstance(delay, int | float) or delay < 0:
                raise InvalidParams(f"{where}.{key} must be a number of at least 0")
            return now_ms + round(delay * unit)
    if raw.get("in") is not None:
        text = str(raw["in"]).strip()
        relative = text if text.lower().startswith("in ") else f"in {text}"
        return _when(relative, now_ms, tz_name, f"{where}.in")
    for key in _AT_TEXT_FIELDS:
        if raw.get(key) is not None:
            return _when(raw[key], now_ms, tz_name, f"{where}.{key}")
    raise InvalidParams(f"{where}.at is required: a time like 'tomorrow 9am' or 'in 2 hours'")


def _every(raw: Mapping[str, Any], now_ms: int, tz_name: str, where: str) -> dict[str, Any]:
    every: Any = None
    for key, unit in _EVERY_FIELDS.items():
        value = raw.get(key)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise InvalidParams(f"{where}.{key} must be a number above 0")
            every = round(value * unit)
            break
    if every is None and raw.get("every") is not None:
        try:
            every = parse_duration(str(raw["every"]))
        except ValueError as exc:
            raise InvalidParams(f"{where}.every: {exc}") from None
    if every is None:
        raise InvalidParams(f"{where}: give the interval (everyMinutes, everyHours or everyDays)")
    schedule: dict[str, Any] = {"kind": "every", "everyMs": every}
    anchor = _anchor(raw, now_ms, tz_name, where)
    if anchor is not None:
        schedule["anchorMs"] = anchor
    return normalise_schedule(schedule, where)


def _anchor(raw: Mapping[str, Any], now_ms: int, tz_name: str, where: str) -> int | None:
    if raw.get("anchorMs") is not None:
        return whole_number(raw["anchorMs"], f"{where}.anchorMs", 0)
    for key in _ANCHOR_TEXT_FIELDS:
        if raw.get(key) is not None:
            return _when(raw[key], now_ms, tz_name, f"{where}.{key}")
    return None


def _when(value: Any, now_ms: int, tz_name: str, where: str) -> int:
    """A time as text or an epoch number (10 digits: seconds, else milliseconds)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise InvalidParams(f"{where} must be a time (text) or an epoch number")
    text = str(int(value)) if isinstance(value, int | float) else value
    try:
        return parse_when(text, now_ms, lenient_zone(tz_name))
    except ValueError as exc:
        raise InvalidParams(f"{where}: {exc}") from None
