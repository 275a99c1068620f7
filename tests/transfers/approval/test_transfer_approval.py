"""Transfers under the approval gate, on a real gateway with a scripted model and a real
node daemon: gsv__Transfer is judged as a Read of its source and a Write of its
destination (gsv's secrets refused, writes outside the node workspace asked), and the node
judges its end again, whatever the gateway asked of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gsv_core.approval.binding import new_key
from gsv_core.approval.binding import sign
from gsv_core.client import GatewayClient
from gsv_core.errors import GsvError
from gsv_core.gateway.server import RunningGateway
from gsv_core.node.guard import NodeGuard
from gsv_core.node.tools.workspace import Workspace
from gsv_core.node.transfers import NodeTransfers
from gsv_core.paths import resolve_paths
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.transfers.nodes import node
from tests.transfers.nodes import transfer
from tests.transfers.nodes import workspace_of


def tool_result(fake: FakeProvider) -> dict[str, Any]:
    return next(m for m in fake.requests[1].messages if m["role"] == "toolResult")


def approvals(log: EventLog) -> list[dict[str, Any]]:
    return [payload for name, payload in log.events if name == "tool.approval"]


def in_workspace(gw: RunningGateway, name: str, content: str) -> None:
    folder = workspace_of(gw)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(content)


def secret_store() -> Path:
    """gsv's secret store, holding a token (tests keep the owner token elsewhere)."""
    secrets = resolve_paths().secrets_file
    if not secrets.exists():
        secrets.parent.mkdir(parents=True, exist_ok=True)
        secrets.write_text('token = "OWNER-SECRET"\n')
        secrets.chmod(0o600)
    return secrets


async def run_transfer(
    client: GatewayClient, fake: FakeProvider, log: EventLog, source: str, destination: str
) -> str:
    """The model calls gsv__Transfer once, then answers; returns the run id."""
    fake.enqueue(call("gsv__Transfer", {"source": source, "destination": destination}))
    fake.enqueue("done")
    return str((await send(client, "move it"))["runId"])


async def pending(log: EventLog) -> dict[str, Any]:
    await log.wait(lambda: approvals(log), "an approval request")
    return approvals(log)[0]


# -- the gateway's policy -----------------------------------------------------------------
async def test_copying_the_secret_store_into_the_workspace_is_refused_unasked(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    """Reading the node's secrets.toml is a Read of a secret: denied, nobody is asked."""
    secrets = secret_store()
    async with node(gw.url, tmp_path / "a", "a"):
        run = await run_transfer(client, fake, log, f"a:{secrets}", "gsv:workspace/leak.txt")
        await log.ended(run)
    result = tool_result(fake)
    assert result["isError"]
    text = result["content"][0]["text"]
    assert "denied by policy" in text and "secret" in text
    assert approvals(log) == []
    assert not (workspace_of(gw) / "leak.txt").exists()


@pytest.mark.parametrize("answer", ["deny", "allow"])
async def test_writing_outside_the_node_workspace_asks_first(
    gw: RunningGateway,
    client: GatewayClient,
    fake: FakeProvider,
    log: EventLog,
    tmp_path: Path,
    answer: str,
) -> None:
    """A destination outside the node's workspace waits for the owner: "deny" writes
    nothing; "allow" runs it, the node taking the gateway's binding for the write."""
    in_workspace(gw, "payload.sh", "echo PWNED\n")
    outside = tmp_path / "home" / ".bashrc"
    async with node(gw.url, tmp_path / "a", "a"):
        run = await run_transfer(client, fake, log, "gsv:workspace/payload.sh", f"a:{outside}")
        request = await pending(log)
        assert request["tool"] == "gsv__Transfer"
        assert request["summary"] == f"Transfer gsv:workspace/payload.sh -> a:{outside}"
        assert request["reason"].startswith(f"destination a:{outside}: ")
        assert "outside the node workspace" in request["reason"]
        assert not outside.exists()  # nothing ran yet
        await client.call("tool.approve", {"approvalId": request["approvalId"], "decision": answer})
        await log.ended(run)
    result = tool_result(fake)
    if answer == "deny":
        assert "denied by user" in result["content"][0]["text"]
        assert not outside.exists()
    else:
        assert not result["isError"]
        assert outside.read_text() == "echo PWNED\n"


@pytest.mark.parametrize("destination", ["a:inbox/notes.txt", "{workspace}/inbox/notes.txt"])
async def test_a_transfer_between_workspaces_runs_unasked(
    gw: RunningGateway,
    client: GatewayClient,
    fake: FakeProvider,
    log: EventLog,
    tmp_path: Path,
    destination: str,
) -> None:
    """Workspace to node workspace (relative or absolute) and back: nobody is asked."""
    in_workspace(gw, "notes.txt", "hello\n")
    a = tmp_path / "a"
    destination = destination.replace("{workspace}", f"a:{a}")
    async with node(gw.url, a, "a"):
        run = await run_transfer(client, fake, log, "gsv:workspace/notes.txt", destination)
        await log.ended(run)
        assert (a / "inbox" / "notes.txt").read_text() == "hello\n"
        fake.requests.clear()
        back = await run_transfer(client, fake, log, destination, "gsv:workspace/back.txt")
        await log.ended(back)
    assert approvals(log) == []
    assert (workspace_of(gw) / "back.txt").read_text() == "hello\n"


# -- the node's own check (a client's transfer.request is not judged by the policy) ------
async def test_a_node_refuses_to_send_its_secret_store(gw: RunningGateway, tmp_path: Path) -> None:
    """Asked straight by the gateway, the node still refuses to read secrets.toml, named or
    through a symlink in its workspace."""
    secrets = secret_store()
    a = tmp_path / "a"
    async with node(gw.url, a, "a"):
        (a / "notes.toml").symlink_to(secrets)
        for source in (f"a:{secrets}", "a:notes.toml"):
            with pytest.raises(GsvError, match="refused on this node"):
                await transfer(gw, source, "gsv:workspace/leak.txt")
    assert not (workspace_of(gw) / "leak.txt").exists()


@pytest.mark.parametrize("key", [None, "another"])
async def test_a_node_refuses_to_write_outside_its_workspace_without_a_valid_binding(
    gw: RunningGateway, tmp_path: Path, key: str | None
) -> None:
    """transfer.receive outside the workspace with no binding, or one signed with another
    key, is refused; inside the workspace it needs none."""
    in_workspace(gw, "payload.sh", "echo PWNED\n")
    outside = tmp_path / "home" / ".bashrc"
    gw.gateway.transfers.approval_key_of = (lambda _: new_key()) if key else None
    async with node(gw.url, tmp_path / "a", "a"):
        with pytest.raises(GsvError, match="refused on this node"):
            await transfer(gw, "gsv:workspace/payload.sh", f"a:{outside}")
        await transfer(gw, "gsv:workspace/payload.sh", "a:payload.sh")
    assert not outside.exists()
    assert (tmp_path / "a" / "payload.sh").read_text() == "echo PWNED\n"


async def test_a_clients_transfer_outside_a_node_workspace_carries_the_binding(
    gw: RunningGateway, tmp_path: Path
) -> None:
    """transfer.request (a person asked for it) is signed for the node, which writes."""
    in_workspace(gw, "notes.txt", "mine\n")
    outside = tmp_path / "elsewhere" / "notes.txt"
    async with node(gw.url, tmp_path / "a", "a"):
        await transfer(gw, "gsv:workspace/notes.txt", f"a:{outside}")
    assert outside.read_text() == "mine\n"


async def test_a_binding_covers_exactly_one_receive(tmp_path: Path) -> None:
    """A binding signed for one transfer.receive does not let another path be written, and
    no binding at all writes nothing outside; gsv's config is refused even when signed."""
    key, workspace = new_key(), tmp_path / "ws"
    guard = NodeGuard("a", str(workspace), key)
    transfers = NodeTransfers(Workspace(workspace).resolve, None, guard.check)
    answers: list[dict[str, Any]] = []

    async def answer(method: str, params: dict[str, Any]) -> None:
        answers.append(params)

    def receive(transfer_id: int, path: Path) -> dict[str, Any]:
        return {"transferId": transfer_id, "path": str(path), "size": 3}

    signed = receive(1, tmp_path / "allowed.txt")
    binding = sign(key, "Write", signed, "allow")
    config = resolve_paths().config_file
    for payload in (
        {**receive(1, tmp_path / "other.txt"), "approval": binding},
        receive(2, tmp_path / "allowed.txt"),
        {**receive(3, config), "approval": sign(key, "Write", receive(3, config), "allow")},
    ):
        await transfers.on_receive(payload, answer)
    assert all("refused on this node" in a.get("error", "") for a in answers)
    assert transfers.in_progress == 0
    await transfers.on_receive({**signed, "approval": binding}, answer)
    assert answers[-1] == {"transferId": 1} and transfers.in_progress == 1
    await transfers.close()
