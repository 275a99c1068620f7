"""Heartbeat intervals: units, sums, off, and clear errors."""

from __future__ import annotations

import pytest

from gsv_core.errors import InvalidParams
from gsv_core.heartbeat.duration import parse_duration

SECOND, MINUTE, HOUR, DAY = 1_000, 60_000, 3_600_000, 86_400_000


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("45s", 45 * SECOND),
        ("30m", 30 * MINUTE),
        ("2h", 2 * HOUR),
        ("1d", DAY),
        ("1h30m", 90 * MINUTE),
        ("1h 30m", 90 * MINUTE),
        (" 2H ", 2 * HOUR),
        ("0", 0),
        ("0m", 0),
        ("off", 0),
        ("OFF", 0),
        ("", 0),
    ],
)
def test_intervals_are_read_in_milliseconds(text: str, ms: int) -> None:
    """Units s/m/h/d and their sums; 0, 0m, off and empty switch heartbeats off."""
    assert parse_duration(text) == ms


@pytest.mark.parametrize("text", ["soon", "30", "30 minutes", "1w", "-5m", "1.5h", "m30"])
def test_unreadable_intervals_are_errors_naming_the_field(text: str) -> None:
    """Text that is not an interval is a 400 naming the field and the text."""
    with pytest.raises(InvalidParams, match=r"agents\.defaultHeartbeat\.every: cannot read"):
        parse_duration(text, "agents.defaultHeartbeat.every")


def test_an_interval_over_a_year_is_refused() -> None:
    """A huge interval is surely a typo."""
    with pytest.raises(InvalidParams, match="longer than a year"):
        parse_duration("400d")
