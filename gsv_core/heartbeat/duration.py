"""Heartbeat intervals: `45s`, `30m`, `2h`, `1d` and sums such as `1h30m`; `0`, `0m`,
`off` or empty switch heartbeats off. Anything else is an error naming the text (the
original silently read it as "off")."""

from __future__ import annotations

import re

from gsv_core.errors import InvalidParams

_UNIT_MS = {"s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_PART = re.compile(r"(\d+)\s*([smhd])")
_WHOLE = re.compile(r"(?:\d+\s*[smhd]\s*)+")
_OFF = {"", "0", "off", "none", "disabled"}
# a heartbeat interval longer than this is surely a typo (and overflows nothing)
MAX_MS = 365 * 86_400_000


def parse_duration(text: str, field: str = "every") -> int:
    """The interval in milliseconds; 0 means heartbeats are off."""
    cleaned = text.strip().lower()
    if cleaned in _OFF:
        return 0
    if not _WHOLE.fullmatch(cleaned):
        raise InvalidParams(
            f"{field}: cannot read {text!r} as an interval; use a number with a unit "
            "(45s, 30m, 2h, 1d, or a sum like 1h30m), or 0 / off to switch heartbeats off"
        )
    total = sum(int(n) * _UNIT_MS[unit] for n, unit in _PART.findall(cleaned))
    if total > MAX_MS:
        raise InvalidParams(f"{field}: {text!r} is longer than a year")
    return total
