"""The dangerous lines of tests/approval/lines_table.py sent for real: a scripted model calls a real node's
Bash with every one of them through a real gateway, the owner says no to each approval
request as it arrives, and the canary files outside the workspace are untouched. Then
the node alone, with no gateway approval at all, refuses every one of them itself."""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection
from websockets.asyncio.server import serve as ws_serve

from gsv_core.approval.binding import sign
from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.approval.lines_table import DANGEROUS
from tests.approval.lines_table import SAFE
from tests.approval.lines_table import render
from tests.approval.test_flow import greet_node
from tests.approval.test_flow import invoke_bash
from tests.approval.test_flow import node
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.wire import owner_token

JOB = "import os\nos.remove({canary!r})\n"


def prepare(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace with scripts that delete the canary; canaries outside it, in a git
    repository (so `git clean` would have something to remove)."""
    workspace, out = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    out.mkdir()
    canary = out / "canary"
    canary.write_text("alive\n")
    (out / "empty").mkdir()
    subprocess.run(["git", "init", "-q", str(out)], check=True)
    (workspace / "job.py").write_text(JOB.format(canary=str(canary)))
    script = workspace / "job.sh"
    script.write_text(f"#!/bin/sh\nrm -f {canary}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return workspace, out


def snapshot(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every file under `root` outside `.git` internals, with its mode and contents."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in [*filenames, *dirnames]:
            path = Path(dirpath) / name
            data = path.read_bytes() if path.is_file() else b"<dir>"
            found[str(path.relative_to(root))] = (path.lstat().st_mode, data)
    return found


async def deny_everything(url: str, denied: list[dict[str, Any]], stop: asyncio.Event) -> None:
    """The owner, answering no to each approval request as it arrives."""
    async with GatewayClient(url, token=owner_token()) as owner:
        events = owner.events()
        while not stop.is_set():
            frame = await anext(events)
            if frame.event == "tool.approval" and frame.payload["state"] == "pending":
                denied.append(frame.payload)
                await owner.call(
                    "tool.approve", {"approvalId": frame.payload["approvalId"], "decision": "deny"}
                )


@pytest.mark.timeout(240)
async def test_every_dangerous_line_waits_for_the_owner_and_the_canaries_survive(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    """Each line pauses for approval with the exact command; denied, nothing ran."""
    workspace, out = prepare(tmp_path)
    before = snapshot(out)
    lines = [render(line, str(out)) for line in DANGEROUS]
    denied, results = await owner_denying(gw.url, client, fake, log, workspace, lines)
    assert [d["summary"] for d in denied] == lines
    assert results[0]["isError"] and "denied by user" in results[0]["content"][0]["text"]
    assert snapshot(out) == before
    assert (workspace / "job.py").exists() and (workspace / "job.sh").exists()


async def owner_denying(
    url: str,
    client: GatewayClient,
    fake: FakeProvider,
    log: EventLog,
    workspace: Path,
    lines: list[str],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The scripted model calls a real node's Bash with each line through the real
    gateway at `url`, and the owner says no to each approval request as it arrives: the
    requests, and the tool results the model was shown."""
    fake.enqueue(*(call("n1__Bash", {"command": line}) for line in lines))
    fake.enqueue("Done.")
    denied: list[dict[str, Any]] = []
    stop = asyncio.Event()
    owner = asyncio.create_task(deny_everything(url, denied, stop))
    async with node(url, workspace):
        run = (await send(client, "try everything"))["runId"]
        assert (await log.ended(run))["state"] == "final"
    stop.set()
    owner.cancel()
    await asyncio.gather(owner, return_exceptions=True)
    return denied, [m for m in fake.requests[-1].messages if m["role"] == "toolResult"]


async def node_replies(
    workspace: Path, lines: list[str], *, approved: bool = False
) -> list[dict[str, Any]]:
    """Send each line to a real node from a gateway that attaches no approval binding
    (as if the gateway's own check were bypassed), or with `approved` the binding for
    exactly that call (as if the owner had said yes to each); the node's replies."""
    replies: list[dict[str, Any]] = []
    done = asyncio.Event()
    key = "k" * 64

    async def fake_gateway(ws: ServerConnection) -> None:
        await greet_node(ws, key)
        for index, line in enumerate(lines):
            args = {"command": line}
            binding = sign(key, "Bash", args, "allow") if approved else None
            replies.append(await invoke_bash(ws, f"c{index}", args, binding))
        done.set()
        await ws.wait_closed()

    async with ws_serve(fake_gateway, "127.0.0.1", 0, compression=None) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        async with node(f"ws://127.0.0.1:{port}/ws", workspace, token="n0.fake-gateway"):
            await asyncio.wait_for(done.wait(), 200)
    return replies


@pytest.mark.timeout(240)
async def test_the_node_refuses_every_dangerous_line_without_an_approval(tmp_path: Path) -> None:
    """The node's guard alone refuses each dangerous line; the canaries survive."""
    workspace, out = prepare(tmp_path)
    before = snapshot(out)
    lines = [render(line, str(out)) for line in DANGEROUS]
    replies = await node_replies(workspace, lines)
    refused = [r for r in replies if "refused on this node" in str(r.get("error"))]
    assert len(refused) == len(lines), [r for r in replies if r not in refused][:3]
    assert snapshot(out) == before


@pytest.mark.timeout(240)
async def test_the_node_runs_every_everyday_line_without_an_approval(tmp_path: Path) -> None:
    """The read-only lines run on the node with no approval at all (they may fail: there
    is no git repository or package.json here, but none is refused)."""
    workspace, _ = prepare(tmp_path)
    (workspace / "README.md").write_text("hello\n")
    replies = await node_replies(workspace, SAFE)
    refused = [(line, r) for line, r in zip(SAFE, replies, strict=True) if "error" in r]
    assert refused == []


async def test_the_canary_does_die_when_the_owner_says_yes(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    """The control: the same harness, one line approved, and the canary is gone (so the
    test above would see a line that ran)."""
    workspace, out = prepare(tmp_path)
    fake.enqueue(call("n1__Bash", {"command": "./job.sh"}))
    fake.enqueue("Ran it.")
    async with node(gw.url, workspace):
        run = (await send(client, "run the job"))["runId"]
        await log.wait(lambda: any(n == "tool.approval" for n, _ in log.events), "the request")
        request = next(p for n, p in log.events if n == "tool.approval")
        assert request["alwaysAllow"] == ["./job.sh"]
        await client.call(
            "tool.approve", {"approvalId": request["approvalId"], "decision": "allow"}
        )
        assert (await log.ended(run))["state"] == "final"
    assert not (out / "canary").exists()
