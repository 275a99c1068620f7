"""The approval prompt shows every argument of a shell call that changes what it does:
a Bash call's `workdir` decides which files `rm -rf *` removes, so a prompt that shows
only the line would let a model have the owner approve one thing and run another."""

from __future__ import annotations

from pathlib import Path

from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.approval.test_flow import approval_event
from tests.approval.test_flow import node
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call


async def test_a_bash_call_s_workdir_is_in_every_prompt(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    """`rm -rf build` in another directory: the summary (TUI, web chat, `gsv approvals`)
    and the paused message (a channel's prompt) name that directory."""
    workspace, elsewhere = tmp_path / "ws", tmp_path / "precious"
    (workspace / "build").mkdir(parents=True)
    (elsewhere / "build").mkdir(parents=True)
    fake.enqueue(call("n1__Bash", {"command": "rm -rf build", "workdir": str(elsewhere)}))
    fake.enqueue("Not removed.")
    async with node(gw.url, workspace):
        run = (await send(client, "clean up"))["runId"]
        asked = await approval_event(log)
        paused = next(p for p in log.of_run(run) if p["state"] == "paused")
        for shown in (asked["summary"], paused["message"]["content"][0]["text"]):
            assert str(elsewhere) in shown and "rm -rf build" in shown
        await client.call("tool.approve", {"approvalId": asked["approvalId"], "decision": "deny"})
        assert (await log.ended(run))["state"] == "final"
    assert (elsewhere / "build").exists()


async def test_a_bash_call_without_workdir_shows_the_line_alone(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    """The usual case (the workspace) stays as it was: the line, nothing added."""
    fake.enqueue(call("n1__Bash", {"command": "rm -rf build"}))
    fake.enqueue("Not removed.")
    async with node(gw.url, tmp_path):
        run = (await send(client, "clean up"))["runId"]
        asked = await approval_event(log)
        assert asked["summary"] == "rm -rf build"
        await client.call("tool.approve", {"approvalId": asked["approvalId"], "decision": "deny"})
        assert (await log.ended(run))["state"] == "final"
