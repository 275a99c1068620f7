"""docs/security.md's table, cell by cell: each (who, what) is tried for real and must come
out allowed, asked or refused as the table says. A real gateway with a scripted model, a
real node (n1), the external channel worker `mychat` of test_guests.py (alice an owner,
bob a guest), cron runs for the system, and raw frames on a node's and a worker's own
sockets."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection

from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.approval.test_flow import node
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.security.test_guests import PASSPORT
from tests.security.test_guests import Worker
from tests.security.test_guests import tool_results
from tests.security.test_guests import worker  # noqa: F401
from tests.wire import handshake
from tests.wire import open_raw
from tests.wire import request

DOC = Path(__file__).resolve().parents[2] / "docs" / "security.md"
HOUR_MS = 3_600_000
# what each column asks the model to do, as a tool call
CALLS = {
    "own files": ("gsv__WriteFile", {"path": "table.md", "content": "mine"}),
    "owner's files": ("gsv__ReadFile", {"path": "MEMORY.md"}),
    "sessions": ("gsv__SessionsList", {}),
    "schedule": ("gsv__Cron", {"action": "add", "job": {"name": "x"}}),
    "node tools": ("n1__Read", {"path": "menu.txt"}),
    "message others": ("gsv__Message", {"text": "hi carol", "channel": "mychat", "to": "carol"}),
}


def documented() -> dict[tuple[str, str], str]:
    """(who, what) -> allowed | asked | refused | - from the table in docs/security.md."""
    lines = [line for line in DOC.read_text().splitlines() if line.startswith("| who | chat")]
    start = DOC.read_text().splitlines().index(lines[0])
    rows = DOC.read_text().splitlines()[start:]
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    cells = {}
    for row in rows[2:]:
        if not row.startswith("|"):
            break
        values = [c.strip() for c in row.strip("|").split("|")]
        for column, value in zip(header[1:], values[1:], strict=True):
            cells[(values[0], column)] = value
    return cells


TABLE = documented()


@dataclass
class Scene:
    gw: RunningGateway
    client: GatewayClient
    fake: FakeProvider
    log: EventLog
    worker: Worker
    clock: list[int]

    async def outcome(self, who: str, tool: str, args: dict[str, Any]) -> str:
        """`who` starts a run whose model calls `tool`: asked (an approval appeared; it is
        denied), refused (the call failed saying so) or allowed (it ran)."""
        self.fake.enqueue(call(tool, args))
        self.fake.enqueue("done")
        before = len(tool_results(self.fake))
        approvals = sum(1 for n, p in self.log.events if n == "tool.approval")
        started = asyncio.ensure_future(self.start(who))
        asked = await self.settle(started, approvals)
        result = tool_results(self.fake)[before]
        if asked:
            return "asked"
        refused = re.search(r"not available to a guest|denied by policy|refused|goes back to that "
                            r"guest only|Not found: guests/", result)  # fmt: skip
        return "refused" if refused else "allowed"

    async def start(self, who: str, reply: str = "done") -> None:
        if who == "owner (client)":
            run = (await send(self.client, "go", key="main"))["runId"]
            await self.log.ended(run)
        elif who in ("owner (channel)", "guest"):
            sender = "alice" if who == "owner (channel)" else "bob"
            done = self.worker.texts(sender).count(reply)
            await self.worker.say(sender, "go")
            await self.worker.until(lambda: self.worker.texts(sender).count(reply) > done, "reply")
        else:  # the system: a cron job, run now
            job = {"name": f"probe-{len(self.fake.requests)}",
                   "schedule": {"kind": "at", "atMs": self.clock[0] + HOUR_MS},
                   "spec": {"mode": "task", "message": "go"}}  # fmt: skip
            added = (await self.client.call("cron.add", job))["job"]
            await self.client.call("cron.run", {"id": added["id"], "mode": "force"}, timeout=120)

    async def settle(self, started: asyncio.Future[None], approvals: int) -> bool:
        """Wait for the run; deny the approval it raises, if any. Whether it asked."""
        asked = False
        async with asyncio.timeout(90):
            while not started.done():
                pending = (await self.client.call("tool.approvals"))["approvals"]
                if pending:
                    asked = True
                    for approval in pending:
                        await self.client.call(
                            "tool.approve",
                            {"approvalId": approval["approvalId"], "decision": "deny"},
                        )
                await asyncio.wait({started}, timeout=0.05)
        await started
        return asked or sum(1 for n, _ in self.log.events if n == "tool.approval") > approvals


@pytest.fixture
def clock() -> list[int]:
    import time

    return [int(time.time() * 1000)]


@pytest.fixture
async def scene(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog,
    worker: Worker, tmp_path: Path, clock: list[int],  # noqa: F811
) -> AsyncIterator[Scene]:  # fmt: skip
    workspace = tmp_path / "n1"
    workspace.mkdir()
    (workspace / "menu.txt").write_text("soup of the day\n")
    async with node(gw.url, workspace):
        yield Scene(gw, client, fake, log, worker, clock)


TOOL_CELLS = [(who, what) for (who, what), value in TABLE.items() if what in CALLS and value != "-"]


@pytest.mark.timeout(180)
@pytest.mark.parametrize(("who", "what"), TOOL_CELLS, ids=[f"{w}/{c}" for w, c in TOOL_CELLS])
async def test_a_tool_cell(scene: Scene, who: str, what: str) -> None:
    tool, args = CALLS[what]
    assert await scene.outcome(who, tool, args) == TABLE[(who, what)]
    if TABLE[(who, what)] == "allowed" and what == "owner's files":
        assert PASSPORT in tool_results(scene.fake)[-1]


async def raw_socket(gw: RunningGateway, who: str) -> ClientConnection:
    """A node's or a channel worker's own socket, connected with its own credential."""
    ws = await open_raw(gw.url)
    if who == "node":
        tools = [{"name": "Read", "description": "read", "inputSchema": {"type": "object"}}]
        await handshake(ws, mode="node", client_id="n9", tools=tools)
    else:
        await handshake(ws, mode="channel", client_id="bridge2", channel="other", account_id="a")
    return ws


SOCKET_CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "chat": ("chat.send", {"sessionKey": "main", "message": "hi"}),
    "answer approvals": ("tool.approve", {"approvalId": "abc123", "decision": "allow"}),
    "admin methods": ("config.get", {"path": "model"}),
}
SOCKET_CELLS = [
    (who, what) for (who, what), value in TABLE.items()
    if who in ("node", "channel worker") and value != "-"
]  # fmt: skip


@pytest.mark.parametrize(("who", "what"), SOCKET_CELLS, ids=[f"{w}/{c}" for w, c in SOCKET_CELLS])
async def test_a_socket_cell(gw: RunningGateway, who: str, what: str) -> None:
    """A node or a worker calling a client's method on its own socket: 403."""
    ws = await raw_socket(gw, who)
    try:
        method, params = SOCKET_CALLS[what]
        answer = await request(ws, method, params)
    finally:
        await ws.close()
    outcome = "allowed" if answer["ok"] else "refused"
    assert outcome == TABLE[(who, what)]
    assert answer["ok"] or answer["error"]["code"] == 403


CHAT_CELLS = [(w, "chat") for w in ("owner (client)", "owner (channel)", "guest", "system")]


@pytest.mark.parametrize(("who", "what"), CHAT_CELLS, ids=[w for w, _ in CHAT_CELLS])
async def test_a_chat_cell(scene: Scene, who: str, what: str) -> None:
    """Starting a run: each of these gets an answer from the model."""
    scene.fake.enqueue("hello")
    count = len(scene.fake.requests)
    await scene.start(who, reply="hello")
    assert TABLE[(who, what)] == ("allowed" if len(scene.fake.requests) > count else "refused")


async def approval_answered(
    scene: Scene, who: str, answer: Callable[[str], Awaitable[None]]
) -> str:
    """`who`'s run raises an approval (gsv__WebFetch sending data asks, for guests too);
    `answer` tries to approve it: allowed when it did, refused when it stayed pending
    (a client then denies it)."""
    scene.fake.enqueue(call("gsv__WebFetch", {"url": "http://127.0.0.1:9/x", "method": "POST",
                                              "body": "data"}), "done")  # fmt: skip
    started = asyncio.ensure_future(scene.start(who))
    async with asyncio.timeout(60):
        while not (pending := (await scene.client.call("tool.approvals"))["approvals"]):
            await asyncio.sleep(0.05)
    await answer(pending[0]["approvalId"])
    left = (await scene.client.call("tool.approvals"))["approvals"]
    if left:
        await scene.client.call(
            "tool.approve", {"approvalId": left[0]["approvalId"], "decision": "deny"}
        )
    await started
    return "refused" if left else "allowed"


@pytest.mark.parametrize("who", ["owner (client)", "owner (channel)", "guest"])
async def test_an_approval_cell(scene: Scene, who: str) -> None:
    """The client's tool.approve; a channel sender's "yes" in the conversation whose run
    asked (the worker relays it)."""

    async def answer(approval_id: str) -> None:
        if who == "owner (client)":
            await scene.client.call(
                "tool.approve", {"approvalId": approval_id, "decision": "allow"}
            )
        else:
            scene.fake.enqueue("a normal reply")
            await scene.worker.say("alice" if who == "owner (channel)" else "bob", "yes")

    assert await approval_answered(scene, who, answer) == TABLE[(who, "answer approvals")]


async def test_the_owner_clients_admin_methods(client: GatewayClient) -> None:
    assert TABLE[("owner (client)", "admin methods")] == "allowed"
    assert (await client.call("config.get", {"path": "model"}))["path"] == "model"


def test_every_cell_of_the_table_is_walked() -> None:
    walked = {*TOOL_CELLS, *SOCKET_CELLS, *CHAT_CELLS,
              *((w, "answer approvals") for w in ("owner (client)", "owner (channel)", "guest")),
              ("owner (client)", "admin methods")}  # fmt: skip
    assert {cell for cell, value in TABLE.items() if value != "-"} == walked
    assert len(TABLE) == 6 * 9
