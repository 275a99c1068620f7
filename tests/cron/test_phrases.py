"""Time phrases and durations: absolute, wall-clock in a zone, relative, across DST."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from gsv_core.cron.phrases import parse_duration
from gsv_core.cron.phrases import parse_when

CHICAGO = ZoneInfo("America/Chicago")
NEW_YORK = ZoneInfo("America/New_York")
MADRID = ZoneInfo("Europe/Madrid")
HOUR = 3_600_000


def ms(iso: str) -> int:
    return int(dt.datetime.fromisoformat(iso).timestamp() * 1000)


NOW = ms("2026-02-13T18:00:00+00:00")  # Friday, 12:00 in Chicago


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-02-14 09:30", ms("2026-02-14T15:30:00+00:00")),
        ("2026-02-14T09:30:15", ms("2026-02-14T15:30:15+00:00")),
        ("2026-02-14 9", ms("2026-02-14T15:00:00+00:00")),
        ("2026-02-14", ms("2026-02-14T06:00:00+00:00")),
        ("2026-02-14T09:30:00Z", ms("2026-02-14T09:30:00+00:00")),
        ("2026-02-14T09:30+01:00", ms("2026-02-14T08:30:00+00:00")),
        ("2026-02-14 09:30 UTC", ms("2026-02-14T09:30:00+00:00")),
        ("1771061400", 1771061400 * 1000),
        ("1771061400123", 1771061400123),
        ("now", NOW),
        ("in 2 hours", NOW + 2 * HOUR),
        ("in 30 minutes", NOW + 30 * 60_000),
        ("in 1h30m", NOW + 90 * 60_000),
        ("+45m", NOW + 45 * 60_000),
        ("In 1.5 Hours", NOW + 90 * 60_000),
        ("today 18:00", ms("2026-02-14T00:00:00+00:00")),
        ("tomorrow 9:15am", ms("2026-02-14T15:15:00+00:00")),
        ("tomorrow at 12am", ms("2026-02-14T06:00:00+00:00")),
        ("tomorrow 12pm", ms("2026-02-14T18:00:00+00:00")),
        ("9pm", ms("2026-02-14T03:00:00+00:00")),
        ("at 11:00", ms("2026-02-14T17:00:00+00:00")),
    ],
)
def test_phrases_in_chicago(text: str, expected: int) -> None:
    """Every supported form resolves; times without a zone are Chicago wall time."""
    assert parse_when(text, NOW, CHICAGO) == expected


def test_relative_phrases_across_spring_forward_are_real_hours() -> None:
    """'in 24 hours' over a DST change is 24 real hours; 'tomorrow 12:00' is the wall clock."""
    now = ms("2026-03-07T12:00:00-05:00")  # New York, the day before clocks go forward
    assert parse_when("in 24 hours", now, NEW_YORK) == now + 24 * HOUR
    assert parse_when("in 24 hours", now, NEW_YORK) == ms("2026-03-08T13:00:00-04:00")
    assert parse_when("tomorrow 12:00", now, NEW_YORK) == now + 23 * HOUR


def test_relative_phrases_across_fall_back_in_madrid() -> None:
    """Madrid's repeated hour: durations stay real time, wall times take the first pass."""
    now = ms("2026-10-25T01:30:00+02:00")
    assert parse_when("in 2 hours", now, MADRID) == ms("2026-10-25T00:30:00+00:00") + HOUR
    assert parse_when("tomorrow 1:30", now, MADRID) == now + 25 * HOUR
    assert parse_when("2026-10-25 02:30", now, MADRID) == ms("2026-10-25T02:30:00+02:00")


def test_a_time_the_clocks_skip_is_refused() -> None:
    """A wall time inside a spring-forward gap does not exist: a clear error."""
    with pytest.raises(ValueError, match="does not exist in America/New_York"):
        parse_when("2026-03-08 02:30", NOW, NEW_YORK)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("someday", "unable to parse datetime"),
        ("", "empty time"),
        ("13pm", "hour must be 1-12"),
        ("tomorrow 25:00", "not a time of day"),
        ("in -5 minutes", "as a duration"),
        ("in 0 minutes", "longer than zero"),
        ("2026-02-30 10:00", "invalid date"),
        ("123", "unable to parse datetime"),
    ],
)
def test_bad_phrases_say_what_is_wrong(text: str, message: str) -> None:
    """Unreadable or impossible times raise a message a person can act on."""
    with pytest.raises(ValueError, match=message):
        parse_when(text, NOW, CHICAGO)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("30m", 30 * 60_000), ("2h", 2 * HOUR), ("1d", 24 * HOUR), ("1h30m", 90 * 60_000),
     ("90 minutes", 90 * 60_000), ("1.5h", 90 * 60_000), ("1 week", 7 * 24 * HOUR),
     ("2 hours and 15 minutes", 135 * 60_000)],
)  # fmt: skip
def test_durations(text: str, expected: int) -> None:
    """Interval texts become milliseconds."""
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "0m", "abc", "30", "5 parsecs"])
def test_bad_durations_are_refused(text: str) -> None:
    """Empty, zero, unit-less or unknown-unit durations are errors."""
    with pytest.raises(ValueError):
        parse_duration(text)
