"""A gateway killed with SIGKILL (a real `gsv gateway run` process, restarted on the same
port and database) loses nothing and repeats nothing: a cron job that fell due while it
was down runs once, with the node it needs, after the restart; a channel reply pending
at the kill is delivered once when the bridge is back; a message the bridge delivers
again is not processed twice."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection

from gsv_core.client import GatewayClient
from gsv_core.errors import NotFound
from tests.cron.conftest import eventually
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import Hang
from tests.fakes.llm_server import ToolCall
from tests.fakes.llm_server import reply
from tests.wire import handshake
from tests.wire import open_raw
from tests.wire import owner_token
from tests.wire import request

OUTBOUND = "channel.outbound"
LISTENING = re.compile(r"^gsv gateway listening on ws://127\.0\.0\.1:(\d+)/ws ")
INBOUND = {"channel": "ext", "accountId": "a1", "peer": {"kind": "dm", "id": "p1"},
           "message": {"id": "x1", "text": "remind me"}}  # fmt: skip


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def gateway_process(port: int) -> Iterator[subprocess.Popen[str]]:
    """`gsv gateway run` on `port` (this test's GSV_HOME: the same database each time)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "gsv_cli", "gateway", "run", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        assert LISTENING.match(proc.stdout.readline()), "the gateway did not start"
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()


def kill(proc: subprocess.Popen[str]) -> None:
    """SIGKILL: no shutdown code runs, as in a crash or an OOM kill."""
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL


@contextmanager
def node_process(url: str, workspace: Path, token: str) -> Iterator[None]:
    """`gsv node run`: it reconnects by itself when the gateway is back."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "gsv_cli", "--url", url, "node", "run", "--id", "box",
         "--workspace", str(workspace), "--no-log-stderr"],
        stdout=subprocess.DEVNULL, env={**os.environ, "GSV_TOKEN": token},
    )  # fmt: skip
    try:
        yield
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


async def configure(client: GatewayClient, llm: FakeLLMServer) -> None:
    provider = {"api": "openai", "baseUrl": llm.openai_base_url}
    await client.call("config.set", {"path": "providers.fake", "value": provider})
    await client.call("config.set", {"path": "model", "value": {"provider": "fake", "id": "m"}})
    await client.call("config.set", {"path": "channels.ext", "value": {"dmPolicy": "open"}})


async def node_online(client: GatewayClient) -> bool:
    nodes = (await client.call("nodes.list"))["nodes"]
    return any(n["nodeId"] == "box" and n["online"] for n in nodes)


@pytest.mark.timeout(180)
async def test_a_job_due_while_the_gateway_was_killed_runs_once_with_its_node(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """The job falls due while the gateway is dead; after the restart it waits for its
    node, runs once, and its tool call reaches the node."""
    port = free_port()
    url = f"ws://127.0.0.1:{port}/ws"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with gateway_process(port) as first:
        token = owner_token()
        assert token is not None
        async with GatewayClient(url, token=token) as client:
            await configure(client, llm)
            with node_process(url, workspace, token):
                await eventually(lambda: node_online(client), "the node to connect", 30)
                due = int(time.time() * 1000) + 3_000
                job = {"name": "remind", "schedule": {"kind": "at", "atMs": due},
                       "spec": {"mode": "task", "message": "write the reminder"}}  # fmt: skip
                job_id = (await client.call("cron.add", job))["job"]["id"]
                kill(first)
                llm.enqueue(
                    reply(ToolCall("box__Write", {"path": "reminder.txt", "content": "ring"})),
                    reply("Written."),
                )
                while time.time() * 1000 < due + 200:  # the job falls due while it is down
                    await asyncio.sleep(0.05)
                with gateway_process(port):
                    await ran_once_with_its_node(url, token, job_id, workspace, llm)


async def ran_once_with_its_node(
    url: str, token: str, job_id: str, workspace: Path, llm: FakeLLMServer
) -> None:
    async with GatewayClient(url, token=token) as client:

        async def ran() -> bool:
            return bool((await client.call("cron.runs", {"jobId": job_id}))["count"])

        await eventually(ran, "the missed job to run after the restart", 60)
        assert await node_online(client)
        (run,) = (await client.call("cron.runs", {"jobId": job_id}))["runs"]
        assert run["status"] == "ok" and run["summary"] == "Written."
        state = (await client.call("cron.list", {}))["jobs"][0]
        assert state["enabled"] is False and state["state"]["lastStatus"] == "ok"
    assert (workspace / "reminder.txt").read_text() == "ring"
    assert len(llm.requests) == 2 and "box__Write" in str(llm.requests[1].body)


async def bridge(url: str) -> ClientConnection:
    ws = await open_raw(url)
    await handshake(ws, mode="channel", client_id="bridge", channel="ext", account_id="a1")
    return ws


async def queued(client: GatewayClient) -> dict[str, Any] | None:
    try:
        accounts = (await client.call("channel.status", {"channel": "ext"}))["accounts"]
    except NotFound:  # nothing waits and no bridge serves ext
        return None
    waiting = [a["queuedReplies"] for a in accounts if "queuedReplies" in a]
    return waiting[0] if waiting else None


@pytest.mark.timeout(180)
async def test_a_pending_reply_is_delivered_once_across_kills(llm: FakeLLMServer) -> None:
    """Killed while the model worked on a bridge's message, and again while its reply
    waited for the bridge: the third gateway delivers it once; the bridge sending the
    message again gets "duplicate"."""
    port = free_port()
    url = f"ws://127.0.0.1:{port}/ws"
    llm.enqueue(Hang(), reply("Reminder set for 9:00."))
    with gateway_process(port) as first:
        token = owner_token()
        assert token is not None
        async with GatewayClient(url, token=token) as client:
            await configure(client, llm)
        ws = await bridge(url)
        assert (await request(ws, "channel.inbound", INBOUND))["payload"]["status"] == "started"
        await eventually(lambda: llm.requests, "the model to be asked")
        kill(first)  # the run is in flight
    await ws.close()
    with gateway_process(port) as second:  # replays the message; the bridge is away
        async with GatewayClient(url, token=token) as client:
            waiting = await eventually(lambda: queued(client), "the reply to be queued", 60)
            assert waiting["count"] == 1
        kill(second)  # the reply waits in the outbox
    with gateway_process(port):
        async with GatewayClient(url, token=token) as client, await bridge(url) as ws:
            delivered, _ = await frames_until(ws, lambda f: f.get("event") == OUTBOUND)
            assert [f["payload"]["message"]["text"] for f in delivered] == [
                "Reminder set for 9:00."
            ]
            await ws.send(json.dumps({"type": "req", "id": "again", "method": "channel.inbound",
                                      "params": INBOUND}))  # fmt: skip
            more, answer = await frames_until(ws, lambda f: f.get("id") == "again")
            assert more == [] and answer["payload"] == {"status": "duplicate"}
            assert await queued(client) is None
    assert len(llm.requests) == 2  # the hung call, then the replayed one: nothing twice


async def frames_until(
    ws: ClientConnection, last: Callable[[dict[str, Any]], bool]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Read frames up to the first that is `last`: (the channel.outbound events seen on
    the way, including it if it is one; that frame)."""
    seen: list[dict[str, Any]] = []
    while True:
        frame: dict[str, Any] = json.loads(await ws.recv())
        if frame.get("event") == OUTBOUND:
            seen.append(frame)
        if last(frame):
            return seen, frame
