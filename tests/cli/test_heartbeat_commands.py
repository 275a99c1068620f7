"""`gsv heartbeat status|start|trigger` against a real gateway (thread): tables, --json,
the trigger's outcome, and exit codes."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner
from typer.testing import Result

from gsv_cli.main import app
from gsv_core.errors import ProviderFailed
from gsv_core.gateway.server import RunningGateway
from tests.fakes.provider import Fail
from tests.fakes.provider import FakeProvider

HEARTBEAT_KEY = "agent:main:heartbeat:system:internal"


def gsv(url: str, *args: str) -> Result:
    return CliRunner().invoke(app, ["--url", url, *args], env={"COLUMNS": "200"})


def test_status_shows_each_agent(live: RunningGateway) -> None:
    """A table row per agent with its interval; --json is the gateway's answer."""
    shown = gsv(live.url, "heartbeat", "status")
    assert shown.exit_code == 0, shown.stderr
    header, row = shown.stdout.splitlines()[:2]
    assert header.split()[:3] == ["agent", "every", "next"]
    assert row.split()[:2] == ["main", "30m"]
    as_json = gsv(live.url, "heartbeat", "status", "main", "--json")
    agents = json.loads(as_json.stdout)["agents"]
    assert list(agents) == ["main"] and agents["main"]["every"] == "30m"
    assert agents["main"]["nextHeartbeatAt"] is not None


def test_start_prints_the_message_and_the_agents(live: RunningGateway) -> None:
    """start: the gateway's message, then the table; --json the whole answer."""
    started = gsv(live.url, "heartbeat", "start")
    assert started.exit_code == 0, started.stderr
    assert started.stdout.startswith("Heartbeat scheduler started\n")
    assert "main" in started.stdout
    as_json = json.loads(gsv(live.url, "--json", "heartbeat", "start", "main").stdout)
    assert as_json["message"] == "Heartbeat scheduler started"
    assert list(as_json["agents"]) == ["main"]


def test_trigger_runs_a_beat_and_shows_the_outcome(
    live: RunningGateway, fake: FakeProvider
) -> None:
    """trigger: one model call; the message, where the alert went, the reply; the
    status table then shows the beat's result."""
    fake.enqueue("The nightly backup failed.")
    triggered = gsv(live.url, "heartbeat", "trigger")
    assert triggered.exit_code == 0, triggered.stderr
    assert triggered.stdout == (
        f"Heartbeat triggered for agent main (session: {HEARTBEAT_KEY})\n"
        "delivered to agent:main:main\nreply: The nightly backup failed.\n"
    )
    assert len(fake.requests) == 1
    shown = gsv(live.url, "heartbeat", "status")
    assert "(manual) delivered to agent:main:main" in shown.stdout
    assert "The nightly backup failed." in shown.stdout


def test_trigger_says_when_nothing_was_delivered(live: RunningGateway, fake: FakeProvider) -> None:
    """An exact HEARTBEAT_OK is held back, and --json shows why."""
    fake.enqueue("HEARTBEAT_OK")
    triggered = gsv(live.url, "heartbeat", "trigger", "main")
    assert "not delivered (heartbeat_ok)" in triggered.stdout
    fake.enqueue("HEARTBEAT_OK")
    result = json.loads(gsv(live.url, "heartbeat", "trigger", "--json").stdout)
    assert (result["ok"], result["delivered"], result["heldBack"]) == (True, False, "heartbeat_ok")


def test_a_failed_trigger_exits_1_with_the_message_on_stderr(
    live: RunningGateway, fake: FakeProvider
) -> None:
    """ok false: the message on stderr, exit 1 (with --json the answer still prints)."""
    fake.enqueue(Fail(ProviderFailed("the model is down")))
    failed = gsv(live.url, "heartbeat", "trigger")
    assert failed.exit_code == 1
    assert failed.stdout == "" and "Heartbeat failed for agent main" in failed.stderr
    fake.enqueue(Fail(ProviderFailed("the model is down")))
    as_json = gsv(live.url, "heartbeat", "trigger", "--json")
    assert as_json.exit_code == 1 and json.loads(as_json.stdout)["ok"] is False


@pytest.mark.parametrize("command", ["status", "start", "trigger"])
def test_an_unknown_agent_exits_1(live: RunningGateway, command: str) -> None:
    """A 404 from the gateway: its message on stderr, exit 1."""
    result = gsv(live.url, "heartbeat", command, "ops")
    assert result.exit_code == 1
    assert "no heartbeat for agent 'ops'" in result.stderr


def test_an_unreachable_gateway_exits_3() -> None:
    """Nothing listening: a hint on stderr, exit 3."""
    result = gsv("ws://127.0.0.1:9/ws", "heartbeat", "status")
    assert result.exit_code == 3
    assert "gsv gateway run" in result.stderr
