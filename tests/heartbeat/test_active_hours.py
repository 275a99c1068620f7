"""Active hours: plain and overnight windows, 24:00, all day, zones, bad input."""

from __future__ import annotations

import datetime as dt

import pytest

from gsv_core.errors import InvalidParams
from gsv_core.heartbeat.active_hours import parse_active_hours
from gsv_core.heartbeat.active_hours import parse_clock


def ms(text: str) -> int:
    """An ISO moment with its offset as epoch milliseconds."""
    return int(dt.datetime.fromisoformat(text).timestamp() * 1000)


@pytest.mark.parametrize(
    ("start", "end", "zone", "moment", "inside"),
    [
        ("08:00", "23:00", None, "2026-02-13T08:00:00+00:00", True),
        ("08:00", "23:00", None, "2026-02-13T07:59:59+00:00", False),
        ("08:00", "23:00", None, "2026-02-13T22:59:00+00:00", True),
        ("08:00", "23:00", None, "2026-02-13T23:00:00+00:00", False),  # end is exclusive
        # crossing midnight: 22:00 to 06:00
        ("22:00", "06:00", None, "2026-02-13T23:30:00+00:00", True),
        ("22:00", "06:00", None, "2026-02-13T00:00:00+00:00", True),
        ("22:00", "06:00", None, "2026-02-13T05:59:00+00:00", True),
        ("22:00", "06:00", None, "2026-02-13T06:00:00+00:00", False),
        ("22:00", "06:00", None, "2026-02-13T12:00:00+00:00", False),
        # 24:00 closes the day; equal ends mean all day
        ("18:00", "24:00", None, "2026-02-13T23:59:00+00:00", True),
        ("18:00", "24:00", None, "2026-02-13T00:00:00+00:00", False),
        ("00:00", "24:00", None, "2026-02-13T03:00:00+00:00", True),
        ("09:00", "09:00", None, "2026-02-13T03:00:00+00:00", True),
        # the window is in its own zone: 08:00-23:00 New York is 13:00-04:00 UTC in winter
        ("08:00", "23:00", "America/New_York", "2026-02-13T12:59:00+00:00", False),
        ("08:00", "23:00", "America/New_York", "2026-02-13T13:00:00+00:00", True),
        ("08:00", "23:00", "America/New_York", "2026-02-14T03:59:00+00:00", True),
        ("08:00", "23:00", "America/New_York", "2026-02-14T04:00:00+00:00", False),
        # ... and after the DST change (EDT, UTC-4) 08:00 is 12:00 UTC
        ("08:00", "23:00", "America/New_York", "2026-03-09T12:00:00+00:00", True),
        # overnight in Madrid (CET, UTC+1): 22:00-07:00 local is 21:00-06:00 UTC
        ("22:00", "07:00", "Europe/Madrid", "2026-02-13T21:30:00+00:00", True),
        ("22:00", "07:00", "Europe/Madrid", "2026-02-13T06:30:00+00:00", False),
    ],
)
def test_active_hours_window(
    start: str, end: str, zone: str | None, moment: str, inside: bool
) -> None:
    """[start, end) in the window's zone; start > end crosses midnight."""
    hours = parse_active_hours(start, end, zone, "UTC", "activeHours")
    assert hours.contains(ms(moment)) is inside


def test_without_a_zone_the_user_timezone_applies() -> None:
    """No activeHours.timezone (or "user"/"local"): userTimezone decides."""
    at = ms("2026-02-13T12:30:00+00:00")  # 07:30 in New York
    for name in (None, "user", "local"):
        hours = parse_active_hours("08:00", "23:00", name, "America/New_York", "activeHours")
        assert not hours.contains(at)
    assert parse_active_hours("08:00", "23:00", None, None, "activeHours").contains(at)


@pytest.mark.parametrize(
    ("text", "end", "minutes"),
    [("00:00", False, 0), ("8:05", False, 485), ("23:59", False, 1439), ("24:00", True, 1440)],
)
def test_clock_times(text: str, end: bool, minutes: int) -> None:
    """HH:MM as minutes after midnight; 24:00 only as an end."""
    assert parse_clock(text, "x", end=end) == minutes


@pytest.mark.parametrize(
    ("text", "end"), [("24:00", False), ("24:30", True), ("25:00", True), ("8am", False),
                      ("12:60", False), ("", True)],
)  # fmt: skip
def test_bad_clock_times_are_errors_naming_the_field(text: str, end: bool) -> None:
    """A time that is not HH:MM in range is a 400 naming the field."""
    with pytest.raises(InvalidParams, match=r"activeHours\.end: .* is not a time of day"):
        parse_clock(text, "activeHours.end", end=end)


def test_an_unknown_zone_is_an_error() -> None:
    """An activeHours.timezone that is not an IANA zone is an error naming it."""
    with pytest.raises(InvalidParams, match="unknown time zone 'Mars/Base'"):
        parse_active_hours("08:00", "23:00", "Mars/Base", "UTC", "activeHours")
