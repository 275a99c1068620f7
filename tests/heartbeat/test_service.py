"""The heartbeat scheduler with an injected clock and an in-memory host: when beats are
due, what skips them (without a run), live config, manual triggers, errors, stop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import pytest

from gsv_core.config import effective_config
from gsv_core.errors import GsvError
from gsv_core.errors import ProviderFailed
from gsv_core.heartbeat.host import LastActive
from gsv_core.heartbeat.service import HeartbeatService
from tests.heartbeat.conftest import HOUR
from tests.heartbeat.conftest import MINUTE
from tests.heartbeat.conftest import START
from tests.heartbeat.conftest import Clock
from tests.heartbeat.conftest import eventually


@dataclass
class MemoryHost:
    """A HeartbeatHost over plain fields; records the runs and deliveries."""

    clock: Clock
    overrides: dict[str, Any] = field(default_factory=dict)
    checklist: str | None = "- Check the backup."
    busy: bool = False
    spent: bool = False  # the background budget of the day is reached
    reply: str = "The backup failed."
    failure: GsvError | None = None
    gate: asyncio.Event | None = None
    last: dict[str, LastActive] = field(default_factory=dict)
    runs: list[tuple[str, str, str]] = field(default_factory=list)
    delivered: list[tuple[str, str, LastActive | None]] = field(default_factory=list)

    def config(self) -> dict[str, Any]:
        return effective_config(self.overrides)

    def now_ms(self) -> int:
        return self.clock()

    async def read_checklist(self, agent_id: str) -> str | None:
        return self.checklist

    def last_active(self) -> dict[str, LastActive]:
        return self.last

    def session_busy(self, agent_id: str, last: LastActive | None) -> bool:
        return self.busy

    async def over_budget(self, agent_id: str) -> bool:
        return self.spent

    async def run_turn(self, agent_id: str, session_key: str, text: str) -> str:
        self.runs.append((agent_id, session_key, text))
        if self.gate is not None:
            await self.gate.wait()
        if self.failure is not None:
            raise self.failure
        return self.reply

    async def deliver(self, agent_id: str, text: str, to: LastActive | None) -> str:
        self.delivered.append((agent_id, text, to))
        return to.channel if to else f"agent:{agent_id}:main"


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def host(clock: Clock) -> MemoryHost:
    return MemoryHost(clock)


@pytest.fixture
async def service(host: MemoryHost) -> AsyncIterator[HeartbeatService]:
    running = HeartbeatService(host)
    running.start()
    yield running
    await running.stop()


def main(service: HeartbeatService) -> dict[str, Any]:
    return service.status()["main"]


async def beat(service: HeartbeatService, clock: Clock, ms: int) -> dict[str, Any]:
    """Move the clock, wake the timer, and wait for the beat that became due."""
    before = main(service).get("lastResult")
    clock.advance(ms)
    service.wake()
    return await eventually(
        lambda: (r := main(service).get("lastResult")) != before and not main(service)["running"]
        and r, "the beat")  # fmt: skip


async def test_the_first_beat_is_one_interval_after_start(service: HeartbeatService) -> None:
    """Start schedules each agent one interval from now; nothing has run yet."""
    state = main(service)
    assert state == {"agentId": "main", "nextHeartbeatAt": START + 30 * MINUTE,
                     "lastHeartbeatAt": None, "lastHeartbeatText": None,
                     "lastHeartbeatSentAt": None, "every": "30m", "running": False}  # fmt: skip


async def test_a_due_beat_runs_and_delivers(
    service: HeartbeatService, host: MemoryHost, clock: Clock
) -> None:
    """At the due time the prompt runs in the heartbeat session and an alert is delivered;
    the next beat is one interval later."""
    result = await beat(service, clock, 30 * MINUTE)
    assert result["status"] == "ok" and result["delivered"] is True
    assert host.runs == [("main", "agent:main:heartbeat:system:internal",
                          host.config()["agents"]["defaultHeartbeat"]["prompt"])]  # fmt: skip
    assert host.delivered == [("main", "The backup failed.", None)]
    state = main(service)
    assert state["lastHeartbeatAt"] == START + 30 * MINUTE
    assert state["nextHeartbeatAt"] == START + 60 * MINUTE
    assert state["lastHeartbeatText"] == "The backup failed."


async def test_an_acknowledgement_and_a_repeat_are_not_delivered(
    service: HeartbeatService, host: MemoryHost, clock: Clock
) -> None:
    """HEARTBEAT_OK is held back; the same alert again within a day too."""
    host.reply = "HEARTBEAT_OK"
    assert (await beat(service, clock, 30 * MINUTE))["heldBack"] == "heartbeat_ok"
    host.reply = "Disk full"
    assert (await beat(service, clock, 30 * MINUTE))["delivered"] is True
    assert (await beat(service, clock, 30 * MINUTE))["heldBack"] == "duplicate"
    assert [text for _, text, _ in host.delivered] == ["Disk full"]
    assert len(host.runs) == 3


@pytest.mark.parametrize(
    ("setup", "reason"),
    [
        ({"checklist": None}, "no_heartbeat_file"),
        ({"checklist": "# Heartbeat checklist\n<!-- add tasks -->\n"}, "empty_heartbeat_file"),
        ({"busy": True}, "session_busy"),
        ({"spent": True}, "budget"),
        ({"overrides": {"agents": {"defaultHeartbeat": {"activeHours": {
            "start": "08:00", "end": "12:00"}}}}}, "outside_active_hours"),
    ],
)  # fmt: skip
async def test_skipped_beats_make_no_run(
    service: HeartbeatService, host: MemoryHost, clock: Clock, setup: dict[str, Any], reason: str
) -> None:
    """Each check skips the beat with the spec's reason and no run; the schedule goes on."""
    for name, value in setup.items():
        setattr(host, name, value)
    result = await beat(service, clock, 30 * MINUTE)
    assert (result["status"], result["skipReason"], result["trigger"]) == (
        "skipped", reason, "interval")  # fmt: skip
    assert host.runs == [] and host.delivered == []
    assert main(service)["nextHeartbeatAt"] == START + 60 * MINUTE


async def test_config_changes_apply_without_a_restart(
    service: HeartbeatService, host: MemoryHost, clock: Clock
) -> None:
    """A new interval moves the next beat at once, without a restart."""
    host.overrides = {"agents": {"list": [{"id": "main", "heartbeat": {"every": "5m"}}]}}
    assert main(service)["nextHeartbeatAt"] == START + 5 * MINUTE
    assert main(service)["every"] == "5m"
    await beat(service, clock, 5 * MINUTE)
    assert len(host.runs) == 1
    host.overrides = {"agents": {"defaultHeartbeat": {"prompt": "Look at the mail."}}}
    await beat(service, clock, 30 * MINUTE)
    assert host.runs[-1][2] == "Look at the mail."


async def test_an_agent_switched_back_on_counts_from_then(
    service: HeartbeatService, host: MemoryHost, clock: Clock
) -> None:
    """Off: no next beat; on again later: one interval from that moment, no backlog."""
    host.overrides = {"agents": {"defaultHeartbeat": {"every": "off"}}}
    assert main(service)["nextHeartbeatAt"] is None
    clock.advance(5 * HOUR)
    host.overrides = {}
    assert main(service)["nextHeartbeatAt"] == START + 5 * HOUR + 30 * MINUTE
    assert host.runs == []


async def test_agents_follow_agents_list(service: HeartbeatService, host: MemoryHost) -> None:
    """Agents come from agents.list (else main); removed agents are dropped."""
    host.overrides = {"agents": {"list": [{"id": "ops"}, {"id": "home"}]}}
    assert sorted(service.status()) == ["home", "ops"]
    host.last = {"main": LastActive("test", "default", {"kind": "dm", "id": "u1"},
                                    "agent:main:main", START)}  # fmt: skip
    status = service.status()
    assert sorted(status) == ["home", "main", "ops"]  # main: only a last-active context
    assert status["main"]["nextHeartbeatAt"] is None
    assert status["main"]["lastActive"]["channel"] == "test"


async def test_a_bad_setting_shows_and_stops_beats(
    service: HeartbeatService, host: MemoryHost
) -> None:
    """An unreadable interval is in the status (naming the field) and no beat runs."""
    host.overrides = {"agents": {"defaultHeartbeat": {"every": "often"}}}
    state = main(service)
    assert state["nextHeartbeatAt"] is None
    assert state["error"].startswith("agents.defaultHeartbeat.every: cannot read 'often'")
    host.overrides = {}
    assert "error" not in main(service)
    assert host.runs == []


async def test_a_manual_trigger_skips_the_checks(
    service: HeartbeatService, host: MemoryHost
) -> None:
    """trigger runs even without HEARTBEAT.md, outside hours and while busy."""
    host.checklist, host.busy = None, True
    host.overrides = {"agents": {"defaultHeartbeat": {"activeHours": {"start": "01:00",
                                                                      "end": "02:00"}}}}  # fmt: skip
    result = await service.trigger("main")
    assert (result.status, result.trigger, result.delivered) == ("ok", "manual", True)
    assert len(host.runs) == 1
    assert main(service)["nextHeartbeatAt"] == START + 30 * MINUTE  # the schedule stays


async def test_a_failed_run_is_an_error_result(
    service: HeartbeatService, host: MemoryHost, clock: Clock
) -> None:
    """A run that fails ends the beat as `error` with its message; nothing is delivered."""
    host.failure = ProviderFailed("model unavailable")
    result = await beat(service, clock, 30 * MINUTE)
    assert (result["status"], result["error"]) == ("error", "model unavailable")
    assert host.delivered == []
    manual = await service.trigger("main")
    assert (manual.status, manual.error) == ("error", "model unavailable")


async def test_stop_cancels_a_beat_in_flight(host: MemoryHost, clock: Clock) -> None:
    """Stopping the scheduler cancels the running beat and the timer cleanly."""
    host.gate = asyncio.Event()
    service = HeartbeatService(host)
    service.start()
    clock.advance(30 * MINUTE)
    service.wake()
    await eventually(lambda: host.runs, "the beat to start")
    assert main(service)["running"] is True
    await service.stop()
    assert service.started is False
    assert host.delivered == []


async def test_start_reschedules_from_now(
    service: HeartbeatService, host: MemoryHost, clock: Clock
) -> None:
    """heartbeat.start moves every agent's next beat to one interval from now."""
    clock.advance(20 * MINUTE)
    service.start()
    assert main(service)["nextHeartbeatAt"] == START + 50 * MINUTE
