"""A node written for the original never answers `node.probe`: runs do not wait for it.
The probe is asked in the background; its answer, whenever it comes, serves later runs.
Frames are built by hand, as the original's node daemon builds them."""

from __future__ import annotations

import json
from typing import Any

from websockets.asyncio.client import ClientConnection

from gsv_core.gateway.server import RunningGateway
from tests.fakes.provider import FakeProvider
from tests.gateway.test_foreign_chat import raw_node, run_end
from tests.skills.conftest import skill_text, workspace_dir, write_skill
from tests.wire import request


async def next_probe(node: ClientConnection) -> dict[str, Any]:
    while True:
        frame = json.loads(await node.recv())
        if frame.get("type") == "evt" and frame["event"] == "node.probe":
            return dict(frame["payload"])


async def chat(owner: ClientConnection, text: str) -> dict[str, Any]:
    reply = await request(owner, "chat.send", {"sessionKey": "main", "message": text})
    return await run_end(owner, reply["payload"]["runId"])


async def test_a_run_ends_while_the_nodes_probe_is_still_unanswered(
    gw: RunningGateway, owner: ClientConnection, fake: FakeProvider
) -> None:
    """The run's prompt uses what is known; the late answer is still taken (not expired)."""
    await gw.gateway.workspace.delete("main", "BOOTSTRAP.md")  # leave commissioning mode
    write_skill(workspace_dir(gw), "shell-work", skill_text(description="shell work", bins=["sh"]))
    async with await raw_node(gw, "old-node") as node:
        assert (await chat(owner, "first"))["state"] == "final"
        probe = await next_probe(node)  # asked, and the run did not wait for the answer
        assert "sh" in probe["bins"]
        assert "shell-work" not in fake.requests[0].system
        answer = {"probeId": probe["probeId"], "ok": True, "bins": {"sh": True}}
        late = await request(node, "node.probe.result", answer)
        assert late["payload"] == {"ok": True}  # the probe was still waiting: not dropped
        assert (await chat(owner, "second"))["state"] == "final"
    assert "shell-work" in fake.requests[1].system
