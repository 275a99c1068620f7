"""Tools found on demand: the on-demand gateway tools are named in the system prompt and
found with gsv__ToolSearch; past `tools.inlineLimit`, the model gets the gateway's other
tools and the first node's; a search returns full schemas, and the tools it found are
offered (and callable) in the run's next step. 200 MCP tools do not grow the first
request beyond the inline set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.tool_search import rank
from gsv_core.providers.base import ToolSpec
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.approval.test_flow import node
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.mcp.conftest import stdio


def names(fake: FakeProvider, index: int) -> list[str]:
    return [tool.name for tool in fake.requests[index].tools]


async def test_a_search_finds_a_hidden_tool_and_the_next_step_can_call_it(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    (tmp_path / "two").mkdir()
    (tmp_path / "two" / "notes.txt").write_text("needle in n2\n")
    await client.call("config.set", {"path": "tools.inlineLimit", "value": 15})
    async with node(gw.url, tmp_path, "n1"), node(gw.url, tmp_path / "two", "n2"):
        fake.enqueue(call("gsv__ToolSearch", {"query": "n2 grep search file contents"}))
        fake.enqueue(call("n2__Grep", {"pattern": "needle"}))
        fake.enqueue("Found it on n2.")
        run = (await send(client, "search n2 for the needle"))["runId"]
        assert (await log.ended(run))["state"] == "final"
    first, second = names(fake, 0), names(fake, 1)
    assert "n1__Read" in first and "gsv__WebFetch" in first and "gsv__ToolSearch" in first
    assert not any(name.startswith("n2__") for name in first)  # left out of the request
    assert "n2__Grep" in second  # found, so offered from the next step on
    found = json.loads(next(m for m in fake.requests[1].messages
                            if m["role"] == "toolResult")["content"][0]["text"])  # fmt: skip
    assert found["tools"][0]["name"] == "n2__Grep"
    assert found["tools"][0]["inputSchema"]["required"] == ["pattern"]
    grep = [m for m in fake.requests[2].messages if m["role"] == "toolResult"][-1]
    assert "needle in n2" in grep["content"][0]["text"]


async def test_under_the_limit_only_the_on_demand_gateway_tools_are_left_out(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    """Every node tool and everyday gateway tool is inline; the on-demand gateway tools are
    named in the system prompt and found with gsv__ToolSearch."""
    async with node(gw.url, tmp_path, "n1"):
        fake.enqueue("Hi.")
        run = (await send(client, "hi"))["runId"]
        assert (await log.ended(run))["state"] == "final"
    offered = names(fake, 0)
    assert "n1__Grep" in offered and "gsv__ReadFile" in offered and "gsv__WebFetch" in offered
    assert "gsv__Cron" not in offered and offered[-1] == "gsv__ToolSearch"
    assert "found with gsv__ToolSearch: Cron (reminders and scheduled jobs)" in (
        fake.requests[0].system
    )
    listed = [t["name"] for t in (await client.call("tools.list"))["tools"]]
    assert "gsv__Cron" in listed and "gsv__ToolSearch" not in listed


async def test_an_on_demand_gateway_tool_is_found_by_name_and_called_next(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """The model searches for a tool the prompt names; the next step offers it and its
    call runs; a new run starts without it again."""
    fake.enqueue(call("gsv__ToolSearch", {"query": "Cron"}))
    fake.enqueue(call("gsv__Cron", {"action": "status"}))
    fake.enqueue("The scheduler is on.")
    run = (await send(client, "is the scheduler on?"))["runId"]
    assert (await log.ended(run))["state"] == "final"
    found = json.loads(next(m for m in fake.requests[1].messages
                            if m["role"] == "toolResult")["content"][0]["text"])  # fmt: skip
    assert found["tools"][0]["name"] == "gsv__Cron"
    assert "action" in found["tools"][0]["inputSchema"]["required"]
    assert "gsv__Cron" not in names(fake, 0) and "gsv__Cron" in names(fake, 1)
    status = [m for m in fake.requests[2].messages if m["role"] == "toolResult"][-1]
    assert not status["isError"] and "enabled" in status["content"][0]["text"]
    fake.enqueue("Hello.")
    await log.ended((await send(client, "hello"))["runId"])
    assert "gsv__Cron" not in names(fake, 3)


async def test_200_mcp_tools_leave_the_first_request_the_size_of_the_inline_set(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    fake.enqueue("Without.")
    await log.ended((await send(client, "before"))["runId"])
    await client.call("mcp.add", {"name": "many", **stdio("--many")})
    listed = (await client.call("tools.list"))["tools"]
    assert sum(1 for t in listed if t["name"].startswith("mcp_many__")) > 200  # all listed
    fake.enqueue("With.")
    await log.ended((await send(client, "after"))["runId"])
    before, after = fake.requests[0].tools, fake.requests[1].tools
    assert len(after) == len(before)  # gsv__ToolSearch was there already
    size = lambda tools: len(json.dumps([t.parameters for t in tools]))  # noqa: E731
    assert size(after) < size(before) + 1000


@pytest.mark.parametrize(
    ("args", "message"),
    [({}, "query"), ({"query": ""}, "query"), ({"query": "x", "limit": 0}, "limit"),
     ({"query": "x", "limit": "5"}, "limit"), ({"query": "x" * 201}, "query")],
)  # fmt: skip
async def test_bad_search_arguments_are_explained_to_the_model(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog,
    args: dict[str, object], message: str,
) -> None:  # fmt: skip
    await client.call("config.set", {"path": "tools.inlineLimit", "value": 1})
    await client.call("mcp.add", {"name": "toy", **stdio()})
    fake.enqueue(call("gsv__ToolSearch", args))
    fake.enqueue("Sorry.")
    await log.ended((await send(client, "look"))["runId"])
    result = next(m for m in fake.requests[1].messages if m["role"] == "toolResult")
    assert result["isError"] is True and message in result["content"][0]["text"]


def test_ranking_prefers_names_then_descriptions() -> None:
    specs = [ToolSpec("n1__Read", "Read a file", {}), ToolSpec("n1__Grep", "Search files", {}),
             ToolSpec("mcp_git__log", "Show the git log", {})]  # fmt: skip
    assert [s.name for s in rank("grep", specs, 5)] == ["n1__Grep"]
    assert [s.name for s in rank("log", specs, 5)] == ["mcp_git__log"]
    assert [s.name for s in rank("file", specs, 5)] == ["n1__Read", "n1__Grep"]
    assert rank("nothing matches", specs, 5) == []


@pytest.mark.parametrize(
    ("query", "first"),
    [("Cron", "gsv__Cron"), ("schedule a reminder", "gsv__Cron"),
     ("remind me tomorrow", "gsv__Cron"), ("send a telegram message", "gsv__Message"),
     ("sub-agent", "gsv__Spawn"), ("node logs", "gsv__LogsGet"),
     ("copy files between nodes", "gsv__Transfer"), ("other sessions", "gsv__SessionsList")],
)  # fmt: skip
async def test_the_on_demand_gateway_tools_are_found_by_what_they_are_for(
    gw: RunningGateway, query: str, first: str
) -> None:
    """A query in the words of the prompt's purposes (or the bare name) ranks the tool
    first; filler words ("a", "me") do not count."""
    assert rank(query, gw.gateway.native_tools.specs(), 5)[0].name == first
