"""The sandbox end to end: a real gateway, a real node with its default sandbox (bwrap),
a scripted model. The lines of issue 37 print no provider key, owner token or stored
conversation; with `toolApproval.mode off` no dangerous line of the approval tests
changes a file outside the workspace or reads a secret, and a write inside still works;
an approval prompt says it lifts the sandbox, and an approved command has full access."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from gsv_core.paths import resolve_paths
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.approval.lines_table import DANGEROUS
from tests.approval.lines_table import render
from tests.approval.test_dangerous_lines_for_real import deny_everything
from tests.approval.test_dangerous_lines_for_real import prepare
from tests.approval.test_dangerous_lines_for_real import snapshot
from tests.approval.test_flow import node
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.node.sandbox.conftest import PROVIDER_KEY
from tests.node.sandbox.conftest import Outsider
from tests.node.sandbox.conftest import needs_bwrap

pytestmark = needs_bwrap
OWNER_TOKEN = "owner-token-SECRET-7f3a"
CONVERSATION = "my bank PIN is 4711"


def results(fake: FakeProvider) -> list[str]:
    """The text of every tool result the model was given, in order (the last request
    holds them all)."""
    return [
        " ".join(str(block.get("text", "")) for block in message["content"])
        for message in fake.requests[-1].messages
        if message["role"] == "toolResult"
    ]


async def finished(log: EventLog, run_id: str, seconds: float) -> dict[str, Any]:
    """The run's end, waited for as long as its many commands may take on a slow box."""
    await log.wait(lambda: {"final", "error"} & set(log.states(run_id)), "the run", seconds)
    return next(p for p in log.of_run(run_id) if p["state"] in ("final", "error"))


def plant_secrets(workspace: Path) -> None:
    """gsv's secret store and a stored conversation where a node finds them; a link to
    the store in the workspace, as a cloned project might bring."""
    paths = resolve_paths()
    paths.config_dir.mkdir(parents=True, exist_ok=True)
    paths.data_dir.mkdir(parents=True, exist_ok=True)
    paths.secrets_file.write_text(f'"gateway.token" = "{OWNER_TOKEN}"\n')
    paths.database.with_name("gsv.db-wal").write_text(CONVERSATION)
    (workspace / "notes").symlink_to(paths.secrets_file)


ISSUE_LINES = [
    "ps eww -p {pid}",
    "ps axeww",
    "grep -Ra -o 'sk-ant-[A-Z]*' /proc/{pid}",
    "grep -ra --include=environ KEY /proc",
    "rg -a -L KEY /proc/{pid}",
    "diff -r /proc/{pid} /dev/null",
    "cat /proc/{pid}/fd/*",
    "cat notes",
    "cat {secrets}",
    "grep -r PIN {data}",
]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("sandbox", ["auto", "off"])
async def test_the_lines_of_the_issue_print_no_key_token_or_conversation(
    gw: RunningGateway,
    client: GatewayClient,
    fake: FakeProvider,
    log: EventLog,
    tmp_path: Path,
    outsider: Outsider,
    sandbox: str,
) -> None:
    """With the sandbox and without it (the reader alone), each line is refused, denied
    by the owner, or runs (confined) and finds nothing."""
    workspace, _ = prepare(tmp_path)
    plant_secrets(workspace)
    paths = resolve_paths()
    lines = [
        line.format(pid=outsider.pid, secrets=paths.secrets_file, data=paths.data_dir)
        for line in ISSUE_LINES
    ]
    fake.enqueue(*(call("n1__Bash", {"command": line}) for line in lines), "Done.")
    denied: list[dict[str, Any]] = []
    stop = asyncio.Event()
    owner = asyncio.create_task(deny_everything(gw.url, denied, stop))
    async with node(gw.url, workspace, sandbox=sandbox):
        run = (await send(client, "look around"))["runId"]
        assert (await finished(log, run, 150))["state"] == "final"
    stop.set()
    owner.cancel()
    await asyncio.gather(owner, return_exceptions=True)
    texts = results(fake)
    assert len(texts) == len(lines)
    for line, text in zip(lines, texts, strict=True):
        for secret in (PROVIDER_KEY, OWNER_TOKEN, CONVERSATION):
            assert secret not in text, (line, text)


@pytest.fixture
def outside_tmp() -> Iterator[Path]:
    """A directory outside /tmp (which the sandbox replaces): there the read-only root is
    what protects the canaries."""
    directory = Path(tempfile.mkdtemp(prefix="gsv-canaries-", dir="/var/tmp"))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.timeout(600)
async def test_with_approvals_off_no_dangerous_line_changes_anything_outside_the_workspace(
    gw: RunningGateway,
    client: GatewayClient,
    fake: FakeProvider,
    log: EventLog,
    tmp_path: Path,
    outside_tmp: Path,
) -> None:
    """Every line runs unasked (mode off) and confined: the canaries in /tmp and under
    /var/tmp survive, no secret is read, and a write inside the workspace works."""
    await client.call("config.set", {"path": "toolApproval.mode", "value": "off"})
    workspace, out = prepare(tmp_path)
    (outside_tmp / "canary").write_text("alive\n")
    plant_secrets(workspace)
    before = (snapshot(out), snapshot(outside_tmp))
    lines = [render(line, str(where)) for line in DANGEROUS for where in (out, outside_tmp)]
    lines.append("echo written > inside.txt")
    fake.enqueue(*(call("n1__Bash", {"command": line}) for line in lines), "Done.")
    async with node(gw.url, workspace, sandbox="auto"):
        run = (await send(client, "do everything"))["runId"]
        assert (await finished(log, run, 560))["state"] == "final"
    assert not [e for name, e in log.events if name == "tool.approval"]  # nothing asked
    assert (snapshot(out), snapshot(outside_tmp)) == before
    assert (workspace / "inside.txt").read_text() == "written\n"
    for text in results(fake):
        assert OWNER_TOKEN not in text and CONVERSATION not in text


async def test_an_approval_prompt_says_it_lifts_the_sandbox_and_the_command_gets_full_access(
    gw: RunningGateway,
    client: GatewayClient,
    fake: FakeProvider,
    log: EventLog,
    tmp_path: Path,
    outside_tmp: Path,
) -> None:
    """`rm` asks (the sandbox's latitude does not cover deleting); the prompt and the
    event say approving runs it outside the sandbox; approved, it deletes the canary
    under /var/tmp, which no confined command can."""
    workspace, _ = prepare(tmp_path)
    canary = outside_tmp / "canary"
    canary.write_text("alive\n")
    fake.enqueue(call("n1__Bash", {"command": f"rm -f {canary}"}), "Removed it.")
    async with node(gw.url, workspace, sandbox="auto"):
        run = (await send(client, "run the job"))["runId"]
        await log.wait(lambda: any(n == "tool.approval" for n, _ in log.events), "the request")
        request = next(p for n, p in log.events if n == "tool.approval")
        assert request["leavesSandbox"] is True
        paused = next(p for n, p in log.events if n == "chat" and p.get("state") == "paused")
        assert "outside the node's sandbox" in paused["message"]["content"][0]["text"]
        await client.call(
            "tool.approve", {"approvalId": request["approvalId"], "decision": "allow"}
        )
        assert (await log.ended(run))["state"] == "final"
    assert not canary.exists()


async def test_unsandboxed_asks_even_for_a_read_only_line(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    """`ls` runs unasked; `ls` with `unsandboxed: true` asks, saying why."""
    workspace, _ = prepare(tmp_path)
    fake.enqueue(call("n1__Bash", {"command": "ls", "unsandboxed": True}), "Listed.")
    async with node(gw.url, workspace, sandbox="auto"):
        run = (await send(client, "list"))["runId"]
        await log.wait(lambda: any(n == "tool.approval" for n, _ in log.events), "the request")
        request = next(p for n, p in log.events if n == "tool.approval")
        assert "outside the node's sandbox" in request["reason"]
        await client.call("tool.approve", {"approvalId": request["approvalId"], "decision": "deny"})
        assert (await log.ended(run))["state"] == "final"


async def test_status_names_the_sandbox_of_each_node(
    gw: RunningGateway, client: GatewayClient, tmp_path: Path
) -> None:
    workspace, _ = prepare(tmp_path)
    async with node(gw.url, workspace, sandbox="auto"):
        status = await client.call("gateway.status")
        listed = await client.call("nodes.list")
    assert status["nodes"][0]["sandbox"] == {"backend": "bwrap", "network": False}
    assert listed["nodes"][0]["sandbox"]["backend"] == "bwrap"
    assert os.path.isdir(workspace)
