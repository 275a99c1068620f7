"""Transfers under the approval gate, on a real gateway and a real node daemon: the node
judges its end of a transfer as a Read or a Write of that path, whatever the gateway
asked of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gsv_core.approval.binding import new_key, sign
from gsv_core.errors import GsvError
from gsv_core.gateway.server import RunningGateway
from gsv_core.node.guard import NodeGuard
from gsv_core.node.tools.workspace import Workspace
from gsv_core.node.transfers import NodeTransfers
from gsv_core.paths import resolve_paths
from tests.transfers.nodes import node, transfer, workspace_of


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
