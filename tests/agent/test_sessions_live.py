"""Sessions across restarts, node tools inside runs, background exec completions, slash
commands, directives and the session tools, on a real gateway with a scripted model."""

from __future__ import annotations

import asyncio
import base64
import json
import struct
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from gsv_core.client import Backoff
from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from gsv_core.node.daemon import NodeDaemon
from gsv_core.node.daemon import NodeSettings
from tests.agent.conftest import KEY
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.waiting import until


@asynccontextmanager
async def node(
    gw: RunningGateway, workspace: Path, node_id: str = "n1"
) -> AsyncIterator[NodeDaemon]:
    settings = NodeSettings(
        url=gw.url,
        node_id=node_id,
        workspace=workspace,
        backoff=Backoff(base=0.05, cap=0.2),
        owner_token=gw.token,
    )
    daemon = NodeDaemon(settings)
    stop = asyncio.Event()
    task = asyncio.create_task(daemon.run(stop))
    await until(lambda: node_id in gw.gateway.nodes.online_ids(), f"node {node_id} online")
    try:
        yield daemon
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


def tiny_png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
        + chunk(b"IEND", b"")
    )


async def test_a_run_uses_a_node_tool_and_reads_its_result(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    """The model calls n1__Read; the node reads the file; the model sees the content."""
    (tmp_path / "notes.txt").write_text("the answer is 42\n")
    async with node(gw, tmp_path):
        fake.enqueue(call("n1__Read", {"path": "notes.txt"}))
        fake.enqueue("It says 42.")
        run = (await send(client, "read notes"))["runId"]
        assert (await log.ended(run))["state"] == "final"
    result = next(m for m in fake.requests[1].messages if m["role"] == "toolResult")
    assert "the answer is 42" in result["content"][0]["text"]
    assert any(t.name == "n1__Read" for t in fake.requests[0].tools)
    assert fake.requests[0].tools[0].name.startswith("gsv__")  # native tools come first
    # the model gets schemas without null branches, and one cache key per conversation
    assert "null" not in json.dumps([t.parameters for t in fake.requests[0].tools])
    assert all("required" in t.parameters for t in fake.requests[0].tools)
    session_id = await client.call("session.get", {"sessionKey": "agent:main:main"})
    assert {r.cache_key for r in fake.requests} == {session_id["sessionId"]}


async def test_image_results_are_stored_and_inlined_for_the_model(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    """A structured image result is kept as an image block: a media reference in the
    history, inline base64 in the next model request."""
    png = tiny_png()
    (tmp_path / "pic.png").write_bytes(png)
    async with node(gw, tmp_path):
        fake.enqueue(call("n1__Read", {"path": "pic.png"}))
        fake.enqueue("A pixel.")
        run = (await send(client, "look"))["runId"]
        await log.ended(run)
    stored = await gw.gateway.sessions.store.messages(KEY)
    image = next(
        b for m in stored if m["role"] == "toolResult" for b in m["content"] if b["type"] == "image"
    )
    assert image["mimeType"] == "image/png" and "data" not in image and image["mediaPath"]
    sent = next(m for m in fake.requests[1].messages if m["role"] == "toolResult")
    inline = next(b for b in sent["content"] if b["type"] == "image")
    assert base64.b64decode(inline["data"]) == png


async def test_stop_during_a_node_tool_returns_at_once(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    """/stop while `sleep 30` runs on the node ends the run immediately; the dangling
    call gets an error result so the history stays valid."""
    async with node(gw, tmp_path):
        fake.enqueue(call("n1__Bash", {"command": "sleep 30"}, "slow"))
        run = (await send(client, "wait"))["runId"]
        await log.wait(lambda: log.of_run(run, "chat.tool"), "the tool to start")
        stopped = await send(client, "/stop")
        assert stopped["response"] == f"Stopped run {run}, cancelled 1 pending tool(s)."
        assert (await log.ended(run))["error"] == "Run cancelled by user"
    stored = await gw.gateway.sessions.store.messages(KEY)
    assert stored[-1]["role"] == "toolResult" and stored[-1]["toolCallId"] == "slow"
    assert stored[-1]["isError"]


async def test_a_node_vanishing_mid_tool_gives_an_error_result_at_once(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    """The node disconnects during a call: the model gets "Node disconnected" and goes on."""
    fake.enqueue(call("n1__Bash", {"command": "sleep 30"}))
    fake.enqueue("The node went away.")
    async with node(gw, tmp_path):
        run = (await send(client, "go"))["runId"]
        await log.wait(lambda: log.of_run(run, "chat.tool"), "the tool to start")
    assert (await log.ended(run))["state"] == "final"
    result = next(m for m in fake.requests[1].messages if m["role"] == "toolResult")
    assert result["isError"] and "Node disconnected: n1" in result["content"][0]["text"]


async def test_background_commands_report_back_into_the_session(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    """A backgrounded Bash command's end arrives as a system message that wakes the session."""
    fake.enqueue(
        call("n1__Bash", {"command": "sleep 0.2; echo bg-finished", "background": True}, "bg")
    )
    fake.enqueue("Started it.")
    fake.enqueue("It finished.")
    async with node(gw, tmp_path):
        run = (await send(client, "start it"))["runId"]
        await log.ended(run)
        await log.wait(lambda: len(fake.requests) >= 3, "the completion to wake the session")
    woken = fake.requests[2].messages[-1]
    assert woken["role"] == "user" and woken["content"].startswith(
        "System event: async_exec_completion"
    )
    assert '"callId": "bg"' in woken["content"] and "bg-finished" in woken["content"]


async def test_an_interrupted_run_is_closed_and_the_queue_goes_on_after_a_restart(
    tmp_path: Path,
) -> None:
    """Kill the gateway mid-run with a queued message: after restart the run is marked
    interrupted in the history and the queued message is answered."""
    config_path = tmp_path / "data" / "gsv.db"
    fake = FakeProvider()
    fake.enqueue("working", asyncio.Event())  # never finishes before the restart
    config = ServerConfig(database=config_path, provider_factory=fake.factory)
    async with serve(config, port=0) as gw, GatewayClient(gw.url, token=gw.token) as c:
        await send(c, "first")
        queued = await send(c, "second")
        assert queued["queued"]
        await fake.streaming.wait()
    fake.enqueue("answer to second")
    async with serve(config, port=0) as gw:
        store = gw.gateway.sessions.store

        async def answered() -> list[dict[str, Any]] | None:
            messages = await store.messages(KEY)
            last = messages[-1] if messages else {}
            done = last.get("role") == "assistant" and last.get("stopReason") != "error"
            return messages if done else None

        messages = await until(answered, "the queued message's answer after the restart")
    roles = [(m["role"], m.get("stopReason")) for m in messages]
    assert roles == [("user", None), ("assistant", "error"), ("user", None), ("assistant", "stop")]
    assert "gateway restarted" in messages[1]["errorMessage"]
    assert messages[2]["content"] == "second"


async def test_slash_commands_answer_at_once(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """/model, /think, /status (the session's effective model) and /help."""
    assert (await send(client, "/model openai/gpt-5"))["response"] == "Model set to openai/gpt-5"
    assert (await send(client, "/think high"))["response"] == "Thinking level set to high"
    status = (await send(client, "/status"))["response"]
    assert "Model: openai/gpt-5" in status and "Thinking: high" in status
    bad = await send(client, "/think sideways")
    assert bad["error"].startswith("Invalid level: sideways")
    assert "/new" in (await send(client, "/help"))["response"]
    run = (await send(client, "hi"))["runId"]
    await log.ended(run)
    assert fake.requests[-1].model == "gpt-5" and fake.requests[-1].thinking == "high"


async def test_a_directive_only_message_applies_to_the_next_message(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """`/t:high` alone is acknowledged and used for the next message only."""
    ack = await send(client, "/t:high")
    assert ack == {
        "status": "directive-only",
        "directives": {"thinkLevel": "high"},
        "response": "_Thinking: high_",
    }
    first = (await send(client, "one"))["runId"]
    await log.ended(first)
    second = (await send(client, "two"))["runId"]
    await log.ended(second)
    assert [r.thinking for r in fake.requests] == ["high", "none"]


async def test_inline_directives_apply_to_their_message(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """`hello /m:openai/o3` runs that message on openai/o3 with the directive removed."""
    started = await send(client, "hello /m:openai/o3")
    assert started["directives"] == {"model": {"provider": "openai", "id": "o3"}}
    await log.ended(started["runId"])
    assert fake.requests[-1].model == "o3"
    assert fake.requests[-1].messages[-1]["content"] == "hello"


async def test_reset_archives_and_starts_a_new_session(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """/new archives the transcript in the workspace and empties the history."""
    run = (await send(client, "hi"))["runId"]
    await log.ended(run)
    reset = await send(client, "/new")
    assert reset["response"] == "Session reset. Archived 2 messages."
    assert await gw.gateway.sessions.store.messages(KEY) == []
    archives = list(
        (Path(gw.gateway.db.path).parent / "workspace" / "agents" / "main" / "sessions").glob(
            "*.jsonl.gz"
        )
    )
    assert len(archives) == 1


async def test_session_send_waits_for_its_own_reply(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """gsv__SessionSend returns the reply of the run it started in the other session."""
    fake.enqueue(
        call("gsv__SessionSend", {"sessionKey": "agent:main:helper:dm:bob", "message": "ping"})
    )
    fake.enqueue("pong")  # the helper session's answer
    fake.enqueue("Helper said pong.")
    await client.call("config.set", {"path": "session.dmScope", "value": "per-channel-peer"})
    run = (await send(client, "ask the helper"))["runId"]
    assert (await log.ended(run))["state"] == "final"
    result = next(m for m in fake.requests[2].messages if m["role"] == "toolResult")
    assert (
        '"status": "ok"' in result["content"][0]["text"]
        and '"reply": "pong"' in result["content"][0]["text"]
    )
    # the session SessionSend started is listed, and says what it is
    kinds = {s["sessionKey"]: s["kind"] for s in (await client.call("sessions.list"))["sessions"]}
    assert kinds["agent:main:helper:dm:bob"] == "sessionSend"
    assert set(kinds.values()) == {"sessionSend", "chat"}


async def test_session_send_refuses_its_own_session(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """Messaging the session the tool runs in is an error, not a wait until timeout."""
    fake.enqueue(call("gsv__SessionSend", {"sessionKey": "main", "message": "me?"}))
    fake.enqueue("ok")
    run = (await send(client, "loop"))["runId"]
    await log.ended(run)
    result = next(m for m in fake.requests[1].messages if m["role"] == "toolResult")
    assert (
        result["isError"]
        and "cannot message the session it runs in" in result["content"][0]["text"]
    )


async def test_sessions_list_and_masked_config_tools(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """gsv__SessionsList lists this session; gsv__ConfigGet never shows a secret."""
    await client.call("config.set", {"path": "apiKeys.openai", "value": "sk-very-secret"})
    fake.enqueue(
        call("gsv__SessionsList", {"messageLimit": 1}),
        call("gsv__ConfigGet", {"path": "apiKeys.openai"}),
    )
    fake.enqueue("done")
    run = (await send(client, "inspect"))["runId"]
    await log.ended(run)
    results = [
        m["content"][0]["text"] for m in fake.requests[1].messages if m["role"] == "toolResult"
    ]
    assert KEY in results[0] and '"kind": "chat"' in results[0]
    assert '"value": "***"' in results[1] and "sk-very-secret" not in results[1]


def test_tiny_png_is_a_png() -> None:
    """The helper's image starts with the PNG signature (guards the image test)."""
    assert tiny_png().startswith(b"\x89PNG")


async def test_each_agent_uses_its_own_model_and_system_prompt(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """`agents.list[].model` and `.systemPrompt` apply to that agent's sessions, below a
    session's own settings (the original ignored them)."""
    agents = [{"id": "main", "default": True},
              {"id": "ops", "model": "openai/gpt-ops", "systemPrompt": "You are OPS-BOT."}]  # fmt: skip
    await client.call("config.set", {"path": "agents.list", "value": agents})
    await client.call("config.set", {"path": "systemPrompt", "value": "You are MAIN-BOT."})
    run = (await send(client, "hi ops", key="agent:ops:main"))["runId"]
    await log.ended(run)
    ops = fake.requests[-1]
    assert ops.model == "gpt-ops" and "OPS-BOT" in ops.system and "MAIN-BOT" not in ops.system
    run = (await send(client, "hi main"))["runId"]
    await log.ended(run)
    main = fake.requests[-1]
    assert main.model != "gpt-ops" and "MAIN-BOT" in main.system
    # a session's own model still wins over its agent's
    assert (await send(client, "/model openai/o3", key="agent:ops:main"))["response"]
    run = (await send(client, "again", key="agent:ops:main"))["runId"]
    await log.ended(run)
    assert fake.requests[-1].model == "o3"
