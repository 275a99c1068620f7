"""Issue 37.3, end to end: the lines of the issue's first bullets, sent for real with a
live process holding a provider key (as a gateway may) and a cloned project's link to
the secret store. A real node refuses each of them without the gateway's approval, and
refuses the secret readers even with it; through a real gateway and node with the
default config, the model is shown no key and no secret."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from gsv_core.paths import resolve_paths
from tests.agent.conftest import EventLog
from tests.approval.test_dangerous_lines_for_real import node_replies
from tests.approval.test_dangerous_lines_for_real import owner_denying
from tests.conftest import PROVIDER_KEY
from tests.fakes.provider import FakeProvider

SECRET = "OWNER-SECRET-TOKEN"
# refused in every mode, approved or not: they read a process's environment (and, through
# /proc/PID/fd, the gateway's open database) or, through a link, the secret store
REFUSED = [
    "grep -Ra -o 'sk-ant-[A-Z]*' /proc/{pid}",
    "grep -ra --include=environ -o 'sk-ant-[A-Z]*' /proc",
    "rg -a -L 'sk-ant-[A-Z]*' /proc/{pid}",
    "diff -r /proc/{pid} /dev/null",
    "cat notes",
    "cat /proc/net/../environ",
]
# they ask: run only with the owner's yes
ASKED = ["ps eww -p {pid}", "ps axeww", "git log --show-signature"]


def workspace_with_a_link(tmp_path: Path) -> Path:
    """A workspace whose `notes` links to gsv's secret store (holding SECRET)."""
    secrets = resolve_paths().secrets_file
    secrets.parent.mkdir(parents=True, exist_ok=True)
    secrets.write_text(f"token = '{SECRET}'\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes").symlink_to(secrets)
    return workspace


def shown(reply: dict[str, Any]) -> str:
    return str(reply)


@pytest.mark.timeout(120)
async def test_a_real_node_refuses_the_issues_lines_without_an_approval(
    tmp_path: Path, key_holder: int
) -> None:
    """No binding: every line is refused by the node itself; no reply holds the key or
    the secret."""
    workspace = workspace_with_a_link(tmp_path)
    lines = [line.format(pid=key_holder) for line in REFUSED + ASKED]
    replies = await node_replies(workspace, lines)
    for line, reply in zip(lines, replies, strict=True):
        assert "refused on this node" in str(reply.get("error")), line
        assert PROVIDER_KEY not in shown(reply) and SECRET not in shown(reply), line


@pytest.mark.timeout(120)
async def test_a_real_node_refuses_the_secret_readers_even_approved(
    tmp_path: Path, key_holder: int
) -> None:
    """With the gateway's binding for each call, the secret readers are still refused
    (the link named by its real path); the asked lines run, as the owner's yes allows:
    `ps eww` then shows the key, which is why it asks."""
    workspace = workspace_with_a_link(tmp_path)
    refused = [line.format(pid=key_holder) for line in REFUSED]
    replies = await node_replies(workspace, refused, approved=True)
    for line, reply in zip(refused, replies, strict=True):
        assert "refused on this node" in str(reply.get("error")), line
        assert PROVIDER_KEY not in shown(reply) and SECRET not in shown(reply), line
    assert "secrets.toml" in str(replies[REFUSED.index("cat notes")]["error"])
    (ps,) = await node_replies(workspace, [f"ps eww -p {key_holder}"], approved=True)
    assert "error" not in ps and PROVIDER_KEY in shown(ps)


@pytest.mark.timeout(240)
async def test_through_a_real_gateway_the_model_sees_no_key_and_no_secret(
    gw: RunningGateway,
    client: GatewayClient,
    fake: FakeProvider,
    log: EventLog,
    tmp_path: Path,
    key_holder: int,
) -> None:
    """Default config: the secret readers are refused without a prompt, the others ask
    and the owner says no; none of the tool results the model reads holds the key or
    the secret."""
    workspace = workspace_with_a_link(tmp_path)
    lines = [line.format(pid=key_holder) for line in REFUSED + ASKED]
    denied, results = await owner_denying(gw.url, client, fake, log, workspace, lines)
    assert [d["summary"] for d in denied] == [line.format(pid=key_holder) for line in ASKED]
    assert len(results) == len(lines)
    assert all(r["isError"] for r in results)
    assert not any(PROVIDER_KEY in str(r) or SECRET in str(r) for r in results)
