"""The native workspace tools through a scripted model on a real gateway, and the prompt
the model is given: commissioning on the first run, normal mode once BOOTSTRAP.md is gone,
daily memory by the user's date."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call

WORKSPACE_TOOLS = ["gsv__ReadFile", "gsv__WriteFile", "gsv__EditFile", "gsv__DeleteFile"]


def tool_results(fake: FakeProvider, request: int = -1) -> list[dict[str, Any]]:
    """The tool results the model was shown in a request, decoded."""
    results = []
    for message in fake.requests[request].messages:
        if message["role"] == "toolResult":
            text = message["content"][0]["text"]
            results.append({"error": text} if message["isError"] else json.loads(text))
    return results


def agent_dir(gw: RunningGateway, agent: str = "main") -> Path:
    return Path(gw.gateway.db.path).parent / "workspace" / "agents" / agent


async def run_turn(client: GatewayClient, log: EventLog, text: str, key: str = "main") -> None:
    run = (await send(client, text, key))["runId"]
    assert (await log.ended(run))["state"] == "final"


async def test_the_workspace_tools_are_offered_first(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """The four workspace tools lead the native tools, with smart-read options."""
    await run_turn(client, log, "hi")
    names = [tool.name for tool in fake.requests[0].tools]
    assert names[:4] == WORKSPACE_TOOLS
    read = fake.requests[0].tools[0].parameters["properties"]
    assert {"path", "startLine", "endLine", "search", "contextLines", "jsonPath"} <= set(read)


async def test_every_workspace_tool_works_through_a_model_run(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """Write, read (whole and searched), edit, list and delete, as the model sees them."""
    fake.enqueue(
        call("gsv__WriteFile", {"path": "notes/todo.md", "content": "buy milk\nfix bike\n"}),
        call("gsv__ReadFile", {"path": "notes/todo.md"}),
        call("gsv__EditFile", {"path": "notes/todo.md", "oldString": "milk", "newString": "tea"}),
        call("gsv__ReadFile", {"path": "notes/todo.md", "search": "TEA", "contextLines": 0}),
        call("gsv__ReadFile", {"path": "notes"}),
        call("gsv__DeleteFile", {"path": "notes/todo.md"}),
        call("gsv__ReadFile", {"path": "notes/todo.md"}),
    )
    fake.enqueue("done")
    await run_turn(client, log, "tidy up")
    wrote, read, edited, searched, listed, deleted, missing = tool_results(fake)
    assert wrote == {"path": "notes/todo.md", "size": 18, "written": True}
    assert read["content"] == "buy milk\nfix bike\n" and read["size"] == 18
    assert read["contentType"] == "text/markdown" and read["lastModified"].endswith("Z")
    assert edited == {
        "path": "notes/todo.md",
        "replacements": 1,
        "edited": True,
        "resolvedSource": "workspace",
        "resolvedPath": "agents/main/notes/todo.md",
    }
    assert searched["content"] == "1:buy tea" and searched["matches"] == 1
    assert listed == {"path": "notes", "files": ["notes/todo.md"], "directories": []}
    assert deleted == {"path": "notes/todo.md", "deleted": True}
    assert missing == {"error": "Error: Not found: notes/todo.md"}
    assert not (agent_dir(gw) / "notes").exists()


async def test_tool_errors_reach_the_model_as_messages(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """Escapes, ambiguous edits and bad arguments come back as readable errors."""
    # the owner's rule: editing SOUL.md would ask first (docs/approvals.md)
    rule = {"id": "files", "tool": "gsv__*File", "decision": "allow"}
    await client.call("config.set", {"path": "toolApproval.rules", "value": [rule]})
    fake.enqueue(
        call("gsv__ReadFile", {"path": "../../etc/passwd"}),
        call("gsv__WriteFile", {"path": "/tmp/x.md", "content": "x"}),
        call("gsv__EditFile", {"path": "SOUL.md", "oldString": "", "newString": "x"}),
        call("gsv__EditFile", {"path": "SOUL.md", "oldString": "- ", "newString": "* "}),
        call("gsv__DeleteFile", {"path": "ghost.md"}),
        call("gsv__WriteFile", {"path": "a.md"}),
        call("gsv__ReadFile", {"path": "SOUL.md", "jsonPath": "a", "search": "b"}),
    )
    fake.enqueue("sorry")
    await run_turn(client, log, "try things")
    errors = [result["error"] for result in tool_results(fake)]
    assert "path traversal ('..') is not allowed" in errors[0]
    assert "absolute paths are not allowed" in errors[1]
    assert errors[2] == "Error: oldString must not be empty"
    assert errors[3].startswith("Error: oldString found ")
    assert errors[3].endswith("Use replaceAll: true or provide a more specific oldString.")
    assert errors[4] == "Error: File not found: ghost.md"
    assert errors[5].startswith("Error: Invalid arguments: content")
    assert "cannot be combined" in errors[6]


async def test_tools_act_on_the_calling_sessions_agent(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """A session of agent `helper` writes into agents/helper/, not main's workspace."""
    fake.enqueue(call("gsv__WriteFile", {"path": "mine.md", "content": "helper's"}))
    fake.enqueue("ok")
    await run_turn(client, log, "note it", key="agent:helper:main")
    assert (agent_dir(gw, "helper") / "mine.md").read_text() == "helper's"
    assert not (agent_dir(gw) / "mine.md").exists()


async def test_the_first_run_commissions_until_bootstrap_is_deleted(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """A fresh agent's prompt leads with the first-run steps; once the agent deletes
    BOOTSTRAP.md (which asks: the file is part of every prompt), the next model call
    is in normal mode."""
    fake.enqueue(call("gsv__DeleteFile", {"path": "BOOTSTRAP.md"}))
    fake.enqueue("All set.")
    run = (await send(client, "hello"))["runId"]
    await log.wait(lambda: any(n == "tool.approval" for n, _ in log.events), "the prompt")
    request = next(p for n, p in log.events if n == "tool.approval")
    assert (request["tool"], request["ruleId"]) == ("gsv__DeleteFile", "gsv-prompt-deletefile")
    await client.call("tool.approve", {"approvalId": request["approvalId"], "decision": "allow"})
    assert (await log.ended(run))["state"] == "final"
    first, second = fake.requests[0].system, fake.requests[1].system
    assert "## First Run: Commissioning" in first and "## Operating Instructions" not in first
    assert "## Current Soul (refine it during commissioning)" in first
    assert "## First Run" not in second and "## Operating Instructions" in second
    assert "## Your Soul" in second
    assert not (agent_dir(gw) / "BOOTSTRAP.md").exists()


@pytest.fixture
async def kiribati(tmp_path: Path, fake: FakeProvider) -> AsyncIterator[RunningGateway]:
    """A gateway whose clock reads 2025-01-31 12:00 UTC (already Feb 1 in UTC+14)."""
    noon = int(dt.datetime(2025, 1, 31, 12, tzinfo=dt.UTC).timestamp() * 1000)
    config = ServerConfig(
        database=tmp_path / "k" / "gsv.db", provider_factory=fake.factory, now_ms=lambda: noon
    )
    async with serve(config, port=0) as running:
        await running.gateway.config.set("userTimezone", "Pacific/Kiritimati")
        yield running


async def test_daily_memory_follows_the_users_timezone(
    kiribati: RunningGateway, fake: FakeProvider
) -> None:
    """Today and yesterday are the user's dates, not UTC's; MEMORY.md is
    shown in the main session."""
    workspace = kiribati.gateway.workspace
    await workspace.delete("main", "BOOTSTRAP.md")
    await workspace.write("main", "memory/2025-02-01.md", "user's today")
    await workspace.write("main", "memory/2025-01-31.md", "user's yesterday")
    await workspace.write("main", "memory/2025-01-30.md", "too old")
    await workspace.write("main", "MEMORY.md", "likes tea")
    async with GatewayClient(kiribati.url, token=kiribati.token) as client:
        events = EventLog(client)
        await run_turn(client, events, "morning")
        await events.close()
    system = fake.requests[0].system
    assert (
        '### Yesterday (2025-01-31)\n<note source="memory/2025-01-31.md">\nuser\'s yesterday'
        in system
    )
    assert '### Today (2025-02-01)\n<note source="memory/2025-02-01.md">\nuser\'s today' in system
    assert "too old" not in system and '<note source="MEMORY.md">\nlikes tea\n</note>' in system
    assert "Today's notes go in memory/2025-02-01.md" in system


async def test_reset_archives_go_through_the_workspace(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """/new archives the transcript as a gzip file the workspace lists (not as text)."""
    await run_turn(client, log, "remember this")
    await client.call("session.reset", {"sessionKey": "agent:main:main"})
    listing = await gw.gateway.workspace.list("main", "sessions")
    assert len(listing["files"]) == 1 and listing["files"][0].endswith(".jsonl.gz")
