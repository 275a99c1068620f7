"""`gsv channels` and `gsv pairing` against a real gateway (thread) with the test channel."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner
from typer.testing import Result

from gsv_cli.main import app
from gsv_core.channels.base import InboundMessage
from gsv_core.channels.base import LoginResult
from gsv_core.channels.base import Peer
from gsv_core.channels.base import Sender
from gsv_core.channels.test_channel import TestChannel
from gsv_core.gateway.server import RunningGateway
from tests.fakes.provider import FakeProvider
from tests.fakes.qr_png import png
from tests.fakes.qr_png import qr_matrix
from tests.fakes.qr_png import read_back
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
    assert listed["count"] == 1 and listed["pairs"][0]["senderId"] == "stranger"
    assert listed["pairs"][0]["firstMessage"] == "hi there"
    approved = gsv(live.url, "pair", "approve", "test", "stranger")
    lines = approved.stdout.splitlines()
    assert approved.exit_code == 0 and lines[0] == "approved stranger on test"
    assert lines[1].startswith("  as a guest: ") and "guests/test/stranger/" in lines[1]
    assert "gsv pairing approve test stranger --owner" in approved.stderr
    # dmScope main: the stranger would share the owner's session; said, with the fix
    assert "their own session" not in approved.stdout
    assert "land in your own main session" in approved.stderr.replace("\n", " ")
    assert "gsv config set session.dmScope per-channel-peer" in approved.stderr.replace("\n", "")
    found = json.loads(gsv(live.url, "--json", "security", "audit").stdout)["findings"]
    assert [f["check"] for f in found if f["check"] == "sessions"] == ["sessions"]
    assert gsv(live.url, "security", "audit", "--fix").exit_code == 0
    assert json.loads(gsv(live.url, "--json", "config", "get", "session.dmScope").stdout) == (
        "per-channel-peer"
    )
    missing = gsv(live.url, "pairing", "reject", "test", "stranger")
    assert missing.exit_code == 1 and "No pending pairing" in missing.stderr


class QrLoginChannel(TestChannel):
    """The test channel with a login that answers with a QR code, as WhatsApp Web does."""

    def __init__(self, data_url: str) -> None:
        super().__init__()
        self.data_url = data_url

    async def login(self, account_id: str, force: bool) -> LoginResult:
        return LoginResult("Scan this code with the app.", qr_data_url=self.data_url)


def test_login_draws_the_qr_code_in_the_terminal(live: RunningGateway) -> None:
    """A login answering with a PNG QR code prints it as half blocks that read back to the
    code, and saves the image too."""
    matrix = qr_matrix()
    data_url = "data:image/png;base64," + base64.b64encode(png(matrix)).decode()
    live.gateway.channels.adapters["qrdemo"] = QrLoginChannel(data_url)
    result = gsv(live.url, "channels", "login", "qrdemo")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "Scan this code with the app."
    drawing = "\n".join(line for line in lines[1:] if set(line) <= set("█▀▄ "))
    assert read_back(drawing) == matrix
    saved = Path(lines[-1].split("also saved to ")[1].rstrip(")"))
    assert saved.read_bytes() == png(matrix)


def test_a_qr_code_that_cannot_be_drawn_is_saved_with_the_reason(live: RunningGateway) -> None:
    """A QR image the terminal cannot draw (here a GIF) is saved, and the output says why."""
    data_url = "data:image/gif;base64," + base64.b64encode(b"GIF89a-not-a-png").decode()
    live.gateway.channels.adapters["qrdemo"] = QrLoginChannel(data_url)
    result = gsv(live.url, "channels", "login", "qrdemo")
    assert result.exit_code == 0
    assert "scan the QR code in " in result.stdout and "not a PNG image" in result.stdout
    saved = Path(result.stdout.split("scan the QR code in ")[1].split(" (")[0])
    assert saved.suffix == ".gif" and saved.read_bytes() == b"GIF89a-not-a-png"


def test_status_shows_replies_waiting_to_be_delivered(live: RunningGateway) -> None:
    """A reply the platform did not take waits in the outbox: status shows how many and
    why, in the table and in --json."""
    assert gsv(live.url, "channels", "start", "test").exit_code == 0
    assert gsv(live.url, "config", "set", "channels.test.dmPolicy", "open").exit_code == 0
    adapter = live.gateway.channels.adapters["test"]
    assert isinstance(adapter, TestChannel)
    adapter.fail_sends = True
    message = InboundMessage("test", "default", Peer("dm", "u1"), "m1", "hello",
                             sender=Sender("u1", "Ann"))  # fmt: skip
    gateway_loop = live.server.get_loop()
    asyncio.run_coroutine_threadsafe(adapter.inject(message), gateway_loop).result(30)
    deadline = time.monotonic() + 30
    while "queuedReplies" not in gsv(live.url, "--json", "channels", "status", "test").stdout:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    status = json.loads(gsv(live.url, "--json", "channels", "status", "test").stdout)
    waiting = status["accounts"][0]["queuedReplies"]
    assert waiting["count"] == 1 and waiting["lastError"] == "test channel: sending failed"
    table = CliRunner().invoke(app, ["--url", live.url, "channels", "status", "test"],
                               env={"COLUMNS": "250"})  # fmt: skip
    assert table.exit_code == 0 and "queued replies" in table.stdout
    assert "1 since" in table.stdout and "(test channel: sending failed)" in table.stdout
