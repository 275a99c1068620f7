"""`gsv channels` and `gsv pairing` against a real gateway (thread) with the test channel."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from gsv_cli.main import app
from gsv_core.channels.base import InboundMessage, Peer, Sender
from gsv_core.gateway.server import RunningGateway
from tests.fakes.provider import FakeProvider
from tests.threaded import threaded_gateway


@pytest.fixture
def live(tmp_path: Path) -> Iterator[RunningGateway]:
    with threaded_gateway(
        tmp_path / "data" / "gsv.db", provider_factory=FakeProvider().factory
    ) as running:
        yield running


def gsv(url: str, *args: str) -> Result:
    return CliRunner().invoke(app, ["--url", url, *args])


def test_start_status_list_stop(live: RunningGateway) -> None:
    """An account starts, shows as connected in status and list, and stops."""
    assert gsv(live.url, "channels", "start", "test").stdout == "started test (default)\n"
    status = json.loads(gsv(live.url, "--json", "channels", "status", "test").stdout)
    assert status["accounts"][0]["connected"] is True
    listed = gsv(live.url, "channels", "list")
    assert "test" in listed.stdout and "connected" in listed.stdout
    assert gsv(live.url, "channel", "stop", "test").exit_code == 0
    assert "stopped" in gsv(live.url, "channels", "list").stdout
    login = gsv(live.url, "channels", "login", "test")
    assert login.exit_code == 0 and "needs no login" in login.stdout


def test_unknown_channels_exit_1(live: RunningGateway) -> None:
    """A channel without an adapter is a clear error."""
    result = gsv(live.url, "channels", "start", "carrier-pigeon")
    assert result.exit_code == 1 and "Unknown channel: carrier-pigeon" in result.stderr


def test_pairing_list_and_approve(live: RunningGateway) -> None:
    """A stranger's request appears in `gsv pairing list` and `gsv pair approve` lets them in."""
    assert gsv(live.url, "channels", "start", "test").exit_code == 0
    adapter = live.gateway.channels.adapters["test"]
    message = InboundMessage("test", "default", Peer("dm", "stranger"), "m1", "hi there",
                             sender=Sender("stranger", "Sam"))  # fmt: skip
    # the gateway runs in its own thread: hand the injection to its event loop
    gateway_loop = live.server.get_loop()
    asyncio.run_coroutine_threadsafe(adapter.inject(message), gateway_loop).result(30)  # type: ignore[attr-defined]
    deadline = time.monotonic() + 30
    while "stranger" not in gsv(live.url, "pairing", "list").stdout:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    listed = json.loads(gsv(live.url, "--json", "pairing", "list").stdout)
    assert listed["pairs"]["test:stranger"]["firstMessage"] == "hi there"
    approved = gsv(live.url, "pair", "approve", "test", "stranger")
    assert approved.exit_code == 0 and approved.stdout == "approved stranger on test\n"
    missing = gsv(live.url, "pairing", "reject", "test", "stranger")
    assert missing.exit_code == 1 and "No pending pairing" in missing.stderr
