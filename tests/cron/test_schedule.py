"""The pure schedule functions: validation, next run (UTC, DST zones), descriptions."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from gsv_core.cron.schedule import describe_schedule
from gsv_core.cron.schedule import next_run
from gsv_core.cron.schedule import normalise_schedule
from gsv_core.errors import InvalidParams


def ms(iso: str) -> int:
    """Epoch ms of an ISO instant with an offset."""
    return int(dt.datetime.fromisoformat(iso).timestamp() * 1000)


def cron(expr: str, tz: str | None = None) -> dict[str, Any]:
    return {"kind": "cron", "expr": expr, **({"tz": tz} if tz else {})}


@pytest.mark.parametrize(
    ("schedule", "now", "expected"),
    [
        # at: the time itself until it has passed
        ({"kind": "at", "atMs": 5000}, 1000, 5000),
        ({"kind": "at", "atMs": 5000}, 5000, None),
        # every: on the anchor's grid, strictly after now
        ({"kind": "every", "everyMs": 3000, "anchorMs": 1000}, 10_000, 13_000),
        ({"kind": "every", "everyMs": 3000, "anchorMs": 1000}, 13_000, 16_000),
        ({"kind": "every", "everyMs": 3000, "anchorMs": 50_000}, 10_000, 50_000),
        ({"kind": "every", "everyMs": 3000}, 10_000, 13_000),
        # cron in UTC: steps, weekdays, standard value/step, names, dow 7 = Sunday
        (
            cron("*/15 * * * *", "UTC"),
            ms("2026-02-11T10:07:30+00:00"),
            ms("2026-02-11T10:15:00+00:00"),
        ),
        (
            cron("0 11 * * 3", "UTC"),
            ms("2026-02-11T10:07:00+00:00"),
            ms("2026-02-11T11:00:00+00:00"),
        ),
        (
            cron("5/20 * * * *", "UTC"),
            ms("2026-02-11T10:07:30+00:00"),
            ms("2026-02-11T10:25:00+00:00"),
        ),
        (
            cron("0 9 * jan-mar mon-fri", "UTC"),
            ms("2026-02-11T10:00:00+00:00"),
            ms("2026-02-12T09:00:00+00:00"),
        ),
        (
            cron("0 0 * * 7", "UTC"),
            ms("2026-02-11T10:00:00+00:00"),
            ms("2026-02-15T00:00:00+00:00"),
        ),
        # a run exactly now is not "next"
        (
            cron("0 * * * *", "UTC"),
            ms("2026-02-11T10:00:00+00:00"),
            ms("2026-02-11T11:00:00+00:00"),
        ),
    ],
)
def test_next_run_table(schedule: dict[str, Any], now: int, expected: int | None) -> None:
    """next_run gives the first run strictly after now for every kind."""
    assert next_run(schedule, now) == expected


@pytest.mark.parametrize(
    ("expr", "tz", "now", "expected"),
    [
        # America/New_York spring forward (2026-03-08 02:00 -> 03:00): 02:30 runs at 03:00 EDT
        (
            "30 2 * * *",
            "America/New_York",
            "2026-03-07T12:00:00-05:00",
            "2026-03-08T03:00:00-04:00",
        ),
        (
            "30 2 * * *",
            "America/New_York",
            "2026-03-08T03:00:00-04:00",
            "2026-03-09T02:30:00-04:00",
        ),
        # fall back (2026-11-01 02:00 -> 01:00): 01:30 runs once, at its first pass
        (
            "30 1 * * *",
            "America/New_York",
            "2026-11-01T01:00:00-04:00",
            "2026-11-01T01:30:00-04:00",
        ),
        (
            "30 1 * * *",
            "America/New_York",
            "2026-11-01T01:30:00-04:00",
            "2026-11-02T01:30:00-05:00",
        ),
        (
            "30 1 * * *",
            "America/New_York",
            "2026-11-01T01:10:00-05:00",
            "2026-11-02T01:30:00-05:00",
        ),
        # a half-hourly job keeps real half hours through the repeated hour
        (
            "*/30 * * * *",
            "America/New_York",
            "2026-11-01T01:30:00-04:00",
            "2026-11-01T01:00:00-05:00",
        ),
        # Europe/Madrid spring forward (2026-03-29 02:00 -> 03:00) and fall back (03:00 -> 02:00)
        ("30 2 * * *", "Europe/Madrid", "2026-03-28T12:00:00+01:00", "2026-03-29T03:00:00+02:00"),
        ("30 2 * * *", "Europe/Madrid", "2026-10-24T12:00:00+02:00", "2026-10-25T02:30:00+02:00"),
        ("30 2 * * *", "Europe/Madrid", "2026-10-25T02:10:00+01:00", "2026-10-26T02:30:00+01:00"),
        ("0 9 * * *", "Europe/Madrid", "2026-03-28T12:00:00+01:00", "2026-03-29T09:00:00+02:00"),
    ],
)
def test_cron_across_dst(expr: str, tz: str, now: str, expected: str) -> None:
    """Skipped times run once after the gap; repeated times run once; offsets follow DST."""
    assert next_run(cron(expr, tz), ms(now)) == ms(expected)


def test_cron_without_tz_uses_the_default_zone() -> None:
    """A cron schedule without tz is computed in the given default (userTimezone)."""
    now = ms("2026-02-13T18:00:00+00:00")
    assert next_run(cron("0 9 * * *"), now, "America/Chicago") == ms("2026-02-14T15:00:00+00:00")


def test_anchored_intervals_do_not_drift() -> None:
    """However late a run ends, the next one stays on anchor + k * every (the original drifted)."""
    anchor, hour = ms("2026-02-13T09:00:00+00:00"), 3_600_000
    schedule = {"kind": "every", "everyMs": hour, "anchorMs": anchor}
    late_end = anchor + hour + 17 * 60_000 + 123
    assert next_run(schedule, late_end) == anchor + 2 * hour


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"kind": "cron", "expr": "* * *"}, "exactly 5 fields"),
        ({"kind": "cron", "expr": "0 0 * * * *"}, "exactly 5 fields"),
        ({"kind": "cron", "expr": "61 * * * *"}, "schedule.expr: invalid cron expression"),
        (
            {"kind": "cron", "expr": "0 9 * * *", "tz": "Mars/Base"},
            "schedule.tz: unknown time zone",
        ),
        ({"kind": "every", "everyMs": 1000}, "schedule.everyMs must be at least 60000"),
        (
            {"kind": "every", "everyMs": 60_000, "anchorMs": -1},
            "schedule.anchorMs must be at least 0",
        ),
        ({"kind": "at", "atMs": "soon"}, "schedule.atMs must be a number"),
        ({"kind": "at", "atMs": 1.5}, "schedule.atMs must be a whole number"),
        ({"expr": "0 9 * * *"}, "schedule.kind is required"),
        ({"kind": "weekly"}, "schedule.kind must be one of at, every, cron"),
        ("0 9 * * *", "schedule must be an object"),
    ],
)
def test_invalid_schedules_name_the_field(raw: Any, message: str) -> None:
    """Every invalid canonical schedule is a 400 whose message names the problem."""
    with pytest.raises(InvalidParams, match=message):
        normalise_schedule(raw)


def test_schedules_are_normalised() -> None:
    """Whitespace collapses, aliases expand, floats that are whole become ints."""
    assert normalise_schedule({"kind": "cron", "expr": "  0   9 * * 1-5 "}) == cron("0 9 * * 1-5")
    assert normalise_schedule({"kind": "cron", "expr": "@daily", "tz": "Europe/Madrid"}) == cron(
        "0 0 * * *", "Europe/Madrid"
    )
    assert normalise_schedule({"kind": "at", "atMs": 5000.0}) == {"kind": "at", "atMs": 5000}


def test_descriptions_read_like_speech() -> None:
    """Schedules are described in words, in the job's zone."""
    at = {"kind": "at", "atMs": ms("2026-02-14T15:30:00+00:00")}
    assert describe_schedule(at, "America/Chicago") == "once at 2026-02-14 09:30 CST"
    every = {"kind": "every", "everyMs": 90 * 60_000, "anchorMs": ms("2026-02-14T09:00:00+00:00")}
    assert describe_schedule(every) == "every 1 hour 30 minutes from 2026-02-14 09:00 UTC"
    assert describe_schedule(cron("0 9 * * *"), "Europe/Madrid") == "cron 0 9 * * * (Europe/Madrid)"
