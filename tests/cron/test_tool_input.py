"""gsv__Cron schedule forms become canonical schedules (the original's tool-input cases)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from gsv_core.cron.tool_input import tool_job
from gsv_core.cron.tool_input import tool_patch
from gsv_core.cron.tool_input import tool_schedule
from gsv_core.errors import InvalidParams

HOUR = 3_600_000


def ms(iso: str) -> int:
    return int(dt.datetime.fromisoformat(iso).timestamp() * 1000)


NOW = ms("2026-02-13T18:00:00+00:00")
CHI = "America/Chicago"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"kind": "at", "at": "2026-02-14 09:30"}, {"kind": "at", "atMs": ms("2026-02-14T15:30:00+00:00")}),
        ({"kind": "at", "at": "tomorrow 9:15am"}, {"kind": "at", "atMs": ms("2026-02-14T15:15:00+00:00")}),
        ({"kind": "at", "in": "2 hours"}, {"kind": "at", "atMs": NOW + 2 * HOUR}),
        ({"kind": "at", "in": "in 30 minutes"}, {"kind": "at", "atMs": NOW + 30 * 60_000}),
        ({"kind": "at", "inMinutes": 5}, {"kind": "at", "atMs": NOW + 5 * 60_000}),
        ({"kind": "at", "when": 1771061400}, {"kind": "at", "atMs": 1771061400 * 1000}),
        ({"kind": "at", "atMs": 123}, {"kind": "at", "atMs": 123}),
        ({"kind": "every", "everyMinutes": 15, "anchor": "2026-02-14T09:00Z"},
         {"kind": "every", "everyMs": 15 * 60_000, "anchorMs": ms("2026-02-14T09:00:00+00:00")}),
        ({"kind": "every", "everyHours": 6}, {"kind": "every", "everyMs": 6 * HOUR}),
        ({"kind": "every", "every": "1d", "startAt": "tomorrow 8am"},
         {"kind": "every", "everyMs": 24 * HOUR, "anchorMs": ms("2026-02-14T14:00:00+00:00")}),
        ({"kind": "cron", "expr": "0 9 * * 1-5"}, {"kind": "cron", "expr": "0 9 * * 1-5", "tz": CHI}),
        ({"kind": "cron", "expr": "0 9 * * *", "tz": "Europe/Madrid"},
         {"kind": "cron", "expr": "0 9 * * *", "tz": "Europe/Madrid"}),
        # the kind inferred, or a bare string
        ({"expr": "*/5 * * * *"}, {"kind": "cron", "expr": "*/5 * * * *", "tz": CHI}),
        ({"everyDays": 1}, {"kind": "every", "everyMs": 24 * HOUR}),
        ({"in": "10 minutes"}, {"kind": "at", "atMs": NOW + 10 * 60_000}),
        ("every 30m", {"kind": "every", "everyMs": 30 * 60_000}),
        ("0 8 * * mon", {"kind": "cron", "expr": "0 8 * * mon", "tz": CHI}),
        ("in 2 hours", {"kind": "at", "atMs": NOW + 2 * HOUR}),
    ],
)  # fmt: skip
def test_tool_schedule_forms(raw: Any, expected: dict[str, Any]) -> None:
    """Each accepted form gives the canonical schedule (userTimezone: Chicago)."""
    assert tool_schedule(raw, NOW, CHI) == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"kind": "at", "inMinutes": -5}, "schedule.inMinutes must be a number of at least 0"),
        ({"kind": "at"}, "schedule.at is required"),
        ({"kind": "at", "at": "someday"}, "schedule.at: unable to parse datetime"),
        ({"kind": "every"}, "give the interval"),
        ({"kind": "every", "everyMinutes": 0}, "schedule.everyMinutes must be a number above 0"),
        ({"kind": "every", "everySeconds": 10}, "at least 60000"),
        ({"kind": "cron"}, "schedule.expr is required"),
        ({"kind": "cron", "expr": "0 9 * *"}, "exactly 5 fields"),
        ({"name": "x"}, "schedule.kind is required"),
        ({"kind": "hourly"}, "schedule.kind must be one of"),
    ],
)
def test_tool_schedule_errors(raw: Any, message: str) -> None:
    """Bad tool input is a 400 naming the field."""
    with pytest.raises(InvalidParams, match=message):
        tool_schedule(raw, NOW, CHI)


def test_job_and_patch_documents() -> None:
    """A job's and a patch's schedules are normalised; everything else passes through."""
    job = tool_job(
        {"name": "n", "schedule": {"kind": "at", "in": "1 hour"}, "spec": {"mode": "task"}},
        NOW,
        CHI,
    )
    assert job == {"name": "n", "schedule": {"kind": "at", "atMs": NOW + HOUR},
                   "spec": {"mode": "task"}}  # fmt: skip
    patch = tool_patch({"schedule": {"kind": "every", "everyHours": 6}, "name": "m"}, NOW, CHI)
    assert patch == {"schedule": {"kind": "every", "everyMs": 6 * HOUR}, "name": "m"}
    with pytest.raises(InvalidParams, match=r"patch\.schedule"):
        tool_patch({"schedule": {"kind": "nope"}}, NOW, CHI)
    with pytest.raises(InvalidParams, match=r"job\.schedule is required"):
        tool_job({"name": "n"}, NOW, CHI)
