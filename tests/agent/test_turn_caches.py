"""What a turn keeps from the last one (the SDK client, compacted tool schemas, the
history's token estimate) never hides a change: each change below reaches the very next
request the model gets. A real gateway whose providers are the official SDKs talking
HTTP to the fake LLM server; the assertions read what that server received."""

from __future__ import annotations

from collections.abc import AsyncIterator
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from gsv_core.providers.retry import RetryPolicy
from tests.agent.conftest import KEY
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.agent.test_sessions_live import node
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import fake_llm_server
from tests.fakes.llm_server import reply
from tests.providers import NoSleep


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with fake_llm_server() as server:
        yield server


@pytest.fixture
async def gw(tmp_path: Path) -> AsyncIterator[RunningGateway]:
    """Providers built from the config as in production (no FakeProvider)."""
    policy = RetryPolicy(sleep=NoSleep(), jitter=lambda: 0.0)
    config = ServerConfig(database=tmp_path / "data" / "gsv.db", retry=policy)
    async with serve(config, port=0) as running:
        yield running


async def use(client: GatewayClient, llm: FakeLLMServer) -> None:
    provider = {"api": "openai", "baseUrl": llm.openai_base_url}
    await client.call("config.set", {"path": "providers.fake", "value": provider})
    await client.call("config.set", {"path": "model", "value": {"provider": "fake", "id": "m"}})


async def turn(client: GatewayClient, log: EventLog, llm: FakeLLMServer, text: str) -> None:
    llm.enqueue(reply("ok"))
    run_id = (await send(client, text))["runId"]
    assert (await log.ended(run_id))["state"] == "final"


def system_of(body: dict[str, Any]) -> str:
    first = body["messages"][0]
    assert first["role"] == "system"
    return str(first["content"])


def tool_names(body: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in body.get("tools", [])}


async def test_a_changed_provider_url_is_used_by_the_next_turn(
    client: GatewayClient, log: EventLog, llm: FakeLLMServer
) -> None:
    """The SDK client kept between turns is not the old server's once baseUrl changes."""
    await use(client, llm)
    await turn(client, log, llm, "first")
    with fake_llm_server() as other:
        await use(client, other)
        before = len(llm.requests)
        other.enqueue(reply("from the other"))
        run_id = (await send(client, "second"))["runId"]
        final = await log.ended(run_id)
        assert final["message"]["content"][0]["text"] == "from the other"
        assert len(other.requests) == 1
        assert len(llm.requests) == before  # the first server heard nothing more
        assert other.requests[0].body["messages"][-1]["content"] == "second"


async def test_a_changed_system_prompt_reaches_the_next_turn(
    client: GatewayClient, log: EventLog, llm: FakeLLMServer
) -> None:
    """A config change and then a session setting change each show in the next request."""
    await use(client, llm)
    await client.call("config.set", {"path": "systemPrompt", "value": "You are Heron."})
    await turn(client, log, llm, "one")
    assert "You are Heron." in system_of(llm.last_body)
    await client.call("config.set", {"path": "systemPrompt", "value": "You are Osprey."})
    await turn(client, log, llm, "two")
    assert "You are Osprey." in system_of(llm.last_body)
    assert "Heron" not in system_of(llm.last_body)
    patch = {"sessionKey": KEY, "settings": {"systemPrompt": "You are Kestrel."}}
    await client.call("session.patch", patch)
    await turn(client, log, llm, "three")
    assert "You are Kestrel." in system_of(llm.last_body)
    assert "Osprey" not in system_of(llm.last_body)


async def test_a_changed_heartbeat_prompt_reaches_the_next_turn(
    client: GatewayClient, log: EventLog, llm: FakeLLMServer
) -> None:
    """A `config.set` of the heartbeat prompt the system prompt quotes, the default's or
    the agent's own, shows in the very next request."""
    await use(client, llm)
    path = "agents.defaultHeartbeat.prompt"
    await client.call("config.set", {"path": path, "value": "Look at the mail."})
    await turn(client, log, llm, "one")
    assert "Configured heartbeat prompt: Look at the mail." in system_of(llm.last_body)
    await client.call("config.set", {"path": path, "value": "Water the plants."})
    await turn(client, log, llm, "two")
    assert "Configured heartbeat prompt: Water the plants." in system_of(llm.last_body)
    assert "mail" not in system_of(llm.last_body)
    agents = [{"id": "main", "heartbeat": {"prompt": "Feed the cat."}}]
    await client.call("config.set", {"path": "agents.list", "value": agents})
    await turn(client, log, llm, "three")  # the agent's own, over the default
    assert "Configured heartbeat prompt: Feed the cat." in system_of(llm.last_body)


async def test_a_workspace_file_edited_on_disk_reaches_the_next_turn(
    client: GatewayClient, log: EventLog, llm: FakeLLMServer, tmp_path: Path
) -> None:
    """SOUL.md changed behind the gateway's back (an editor, not an RPC) is read again
    (a first run's prompt injects it too)."""
    await use(client, llm)
    await turn(client, log, llm, "one")  # seeds the workspace
    soul = tmp_path / "data" / "workspace" / "agents" / "main" / "SOUL.md"
    assert soul.is_file()
    soul.write_text("# Soul\n\nAlways answer in haiku.\n")
    await turn(client, log, llm, "two")
    assert "Always answer in haiku." in system_of(llm.last_body)
    soul.write_text("# Soul\n\nAnswer in limericks now.\n")
    await turn(client, log, llm, "three")
    assert "Answer in limericks now." in system_of(llm.last_body)
    assert "haiku" not in system_of(llm.last_body)


async def test_a_node_coming_and_going_changes_the_next_turns_tools(
    gw: RunningGateway, client: GatewayClient, log: EventLog, llm: FakeLLMServer, tmp_path: Path
) -> None:
    """The tool list (schemas compacted once per tool) follows nodes connecting and leaving."""
    await use(client, llm)
    await turn(client, log, llm, "before")
    assert not any(name.startswith("n1__") for name in tool_names(llm.last_body))
    async with node(gw, tmp_path / "n1"):
        await turn(client, log, llm, "while connected")
        assert "n1__Read" in tool_names(llm.last_body)
        schema = next(
            t["function"]["parameters"]
            for t in llm.last_body["tools"]
            if t["function"]["name"] == "n1__Read"
        )
        assert schema["type"] == "object" and "path" in schema["properties"]
    await until_offline(gw, "n1")
    await turn(client, log, llm, "after")
    assert not any(name.startswith("n1__") for name in tool_names(llm.last_body))


async def until_offline(gw: RunningGateway, node_id: str) -> None:
    from tests.waiting import until

    await until(lambda: node_id not in gw.gateway.nodes.online_ids(), f"{node_id} offline")


async def test_each_reply_is_in_the_usage_ledger(
    client: GatewayClient, log: EventLog, llm: FakeLLMServer
) -> None:
    """The ledger row written in the reply's transaction is there, one per model call."""
    await use(client, llm)
    for text in ("one", "two", "three"):
        llm.enqueue(reply("ok", usage=(12, 3)))
        run_id = (await send(client, text))["runId"]
        assert (await log.ended(run_id))["state"] == "final"
    report = await client.call("usage.get", {"groupBy": "model"})
    assert report["total"]["calls"] == 3
    assert report["total"]["input"] == 36 and report["total"]["output"] == 9
