"""Reset policies: the pure rule (table tests, timezones) and the live behaviour (the
triggering message opens the new session), with an injected clock."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from gsv_core.agent.reset_policy import daily_boundary_ms
from gsv_core.agent.reset_policy import is_due
from gsv_core.client import GatewayClient
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from tests.agent.conftest import KEY
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.fakes.provider import FakeProvider


def ms(year: int, month: int, day: int, hour: int, minute: int = 0, tz: str = "UTC") -> int:
    return int(dt.datetime(year, month, day, hour, minute, tzinfo=ZoneInfo(tz)).timestamp() * 1000)


@pytest.mark.parametrize(
    ("policy", "last", "now", "tz", "due"),
    [
        (None, ms(2026, 1, 1, 0), ms(2026, 6, 1, 0), "UTC", False),
        ({"mode": "manual"}, ms(2026, 1, 1, 0), ms(2026, 6, 1, 0), "UTC", False),
        # idle: strictly after the threshold
        (
            {"mode": "idle", "idleMinutes": 30},
            ms(2026, 1, 1, 10),
            ms(2026, 1, 1, 10, 30),
            "UTC",
            False,
        ),
        (
            {"mode": "idle", "idleMinutes": 30},
            ms(2026, 1, 1, 10),
            ms(2026, 1, 1, 10, 31),
            "UTC",
            True,
        ),
        # idleMinutes 0 (as in the original): any idle time at all resets, none does not
        ({"mode": "idle", "idleMinutes": 0}, ms(2026, 1, 1, 10), ms(2026, 1, 1, 10), "UTC", False),
        (
            {"mode": "idle", "idleMinutes": 0},
            ms(2026, 1, 1, 10),
            ms(2026, 1, 1, 10) + 1,
            "UTC",
            True,
        ),
        # daily at 4: last activity before today's boundary resets, after it does not
        ({"mode": "daily", "atHour": 4}, ms(2026, 1, 2, 3), ms(2026, 1, 2, 5), "UTC", True),
        ({"mode": "daily", "atHour": 4}, ms(2026, 1, 2, 4, 30), ms(2026, 1, 2, 23), "UTC", False),
        # before the reset hour the boundary is yesterday's
        ({"mode": "daily", "atHour": 4}, ms(2026, 1, 1, 5), ms(2026, 1, 2, 3), "UTC", False),
        ({"mode": "daily", "atHour": 4}, ms(2026, 1, 1, 3), ms(2026, 1, 2, 3), "UTC", True),
        # the hour is the user's: 04:00 in Chicago is 10:00 UTC in winter
        (
            {"mode": "daily", "atHour": 4},
            ms(2026, 1, 2, 9),
            ms(2026, 1, 2, 9, 30),
            "America/Chicago",
            False,
        ),
        (
            {"mode": "daily", "atHour": 4},
            ms(2026, 1, 2, 9),
            ms(2026, 1, 2, 10, 30),
            "America/Chicago",
            True,
        ),
    ],
)
def test_when_a_session_is_due_for_a_reset(
    policy: dict[str, object] | None, last: int, now: int, tz: str, due: bool
) -> None:
    """manual never, idle strictly after the idle time, daily after atHour in the user's zone."""
    assert is_due(policy, last, now, tz) is due


def test_the_daily_boundary_follows_dst() -> None:
    """In New York the 4:00 boundary is 09:00 UTC in winter and 08:00 UTC in summer."""
    ny = ZoneInfo("America/New_York")
    assert daily_boundary_ms(ms(2026, 1, 15, 12), 4, ny) == ms(2026, 1, 15, 9)
    assert daily_boundary_ms(ms(2026, 7, 15, 12), 4, ny) == ms(2026, 7, 15, 8)


def test_a_bad_timezone_falls_back_to_utc() -> None:
    """An unknown userTimezone is treated as UTC rather than failing the message."""
    assert is_due(
        {"mode": "daily", "atHour": 4}, ms(2026, 1, 2, 3), ms(2026, 1, 2, 5), "Mars/Olympus"
    )


async def test_an_idle_session_resets_and_keeps_the_triggering_message(tmp_path: Path) -> None:
    """After the idle time the next message starts a fresh session and is its first message."""
    now = [ms(2026, 3, 1, 12)]
    fake = FakeProvider()
    config = ServerConfig(
        database=tmp_path / "d" / "gsv.db", provider_factory=fake.factory, now_ms=lambda: now[0]
    )
    async with serve(config, port=0) as gw, GatewayClient(gw.url, token=gw.token) as client:
        log = EventLog(client)
        await client.call(
            "session.patch", {"sessionKey": KEY, "resetPolicy": {"mode": "idle", "idleMinutes": 60}}
        )
        await log.ended((await send(client, "before"))["runId"])
        first_id = (await client.call("session.get", {"sessionKey": KEY}))["sessionId"]
        now[0] += 61 * 60_000
        await log.ended((await send(client, "after the break"))["runId"])
        got = await client.call("session.get", {"sessionKey": KEY})
        preview = await client.call("session.preview", {"sessionKey": KEY})
        notices = [p for name, p in log.events if name == "session.notice"]
        await log.close()
    assert got["previousSessionIds"] == [first_id] and got["sessionId"] != first_id
    assert [m.get("content") for m in preview["messages"] if m["role"] == "user"] == [
        "after the break"
    ]
    assert notices and notices[0]["kind"] == "reset" and "idle" in notices[0]["text"]
    assert fake.requests[-1].messages[0]["content"] == "after the break"


async def test_a_manual_session_never_resets_on_its_own(tmp_path: Path) -> None:
    """A manual-policy session never resets on its own, however long the gap."""
    now = [ms(2026, 3, 1, 12)]
    fake = FakeProvider()
    config = ServerConfig(
        database=tmp_path / "d" / "gsv.db", provider_factory=fake.factory, now_ms=lambda: now[0]
    )
    async with serve(config, port=0) as gw, GatewayClient(gw.url, token=gw.token) as client:
        log = EventLog(client)
        await client.call("session.patch", {"sessionKey": KEY, "resetPolicy": {"mode": "manual"}})
        await log.ended((await send(client, "one"))["runId"])
        now[0] += 400 * 24 * 3600_000
        await log.ended((await send(client, "two"))["runId"])
        got = await client.call("session.get", {"sessionKey": KEY})
        await log.close()
    assert got["previousSessionIds"] == [] and got["messageCount"] == 4


async def test_idle_zero_is_accepted_and_an_empty_session_resets_too(tmp_path: Path) -> None:
    """`idleMinutes: 0` is a valid policy; a session with no messages yet that falls due
    still gets a new session id (as in the original)."""
    now = [ms(2026, 3, 1, 12)]
    fake = FakeProvider()
    config = ServerConfig(
        database=tmp_path / "d" / "gsv.db", provider_factory=fake.factory, now_ms=lambda: now[0]
    )
    async with serve(config, port=0) as gw, GatewayClient(gw.url, token=gw.token) as client:
        log = EventLog(client)
        policy = {"mode": "idle", "idleMinutes": 0}
        await client.call("session.patch", {"sessionKey": KEY, "resetPolicy": policy})
        empty_id = (await client.call("session.get", {"sessionKey": KEY}))["sessionId"]
        now[0] += 1000
        await log.ended((await send(client, "hello"))["runId"])
        got = await client.call("session.get", {"sessionKey": KEY})
        await log.close()
    assert got["resetPolicy"]["idleMinutes"] == 0
    assert got["previousSessionIds"] == [empty_id] and got["sessionId"] != empty_id
