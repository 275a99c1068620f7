"""MCP tools in agent runs (a real gateway, the scripted model, the toy MCP server):
images reach the model as images, a deny rule naming MCP tools refuses the call, and a
hanging tool ends in a timeout the model reads. (Tools the toy server does not mark
read-only ask first: these tests allow them by a rule; tests/mcp/test_approval.py tests
the asking.)"""

from __future__ import annotations

from typing import Any

from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.mcp.conftest import set_rules
from tests.mcp.conftest import stdio


def tool_result(fake: FakeProvider) -> dict[str, Any]:
    return next(m for m in fake.requests[1].messages if m["role"] == "toolResult")


async def run_calling(
    client: GatewayClient, fake: FakeProvider, log: EventLog, tool: str, args: dict[str, Any]
) -> dict[str, Any]:
    """One turn whose model calls `tool`; the toolResult the model got next."""
    fake.enqueue(call(tool, args))
    fake.enqueue("Done.")
    run = (await send(client, "go"))["runId"]
    assert (await log.ended(run))["state"] == "final"
    return tool_result(fake)


async def test_an_image_result_reaches_the_model_as_an_image(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    await client.call("mcp.add", {"name": "toy", **stdio()})
    result = await run_calling(client, fake, log, "mcp_toy__picture", {})
    assert result["isError"] is False
    assert [block["type"] for block in result["content"]] == ["image"]
    assert result["content"][0]["mimeType"] == "image/png"


async def test_a_deny_rule_naming_mcp_tools_refuses_the_call(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    await client.call("mcp.add", {"name": "toy", **stdio()})
    rule = {"tool": "mcp_toy__*", "decision": "deny", "reason": "no toys"}
    await client.call("config.set", {"path": "toolApproval.rules", "value": [rule]})
    result = await run_calling(client, fake, log, "mcp_toy__echo", {"text": "x"})
    assert result["isError"] is True
    assert result["content"][0]["text"] == "Error: Tool execution denied by policy: no toys"


async def test_a_hanging_tool_ends_in_a_timeout_the_model_reads(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """The call's 1 s deadline covers the call only: the server's start (a cold `import mcp`
    takes seconds on a loaded machine) is under startTimeoutMs, so this never flakes."""
    await client.call("mcp.add", {"name": "toy", **stdio(timeoutMs=1000)})
    await set_rules(client, {"tool": "mcp_toy__*", "decision": "allow"})
    result = await run_calling(client, fake, log, "mcp_toy__hang", {})
    assert result["isError"] is True and "timed out" in result["content"][0]["text"]


async def test_a_server_slower_to_start_than_a_call_may_take_still_comes_up(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """timeoutMs bounds a call, not the start: a server that needs three seconds to come
    up serves with a two-second call deadline (startTimeoutMs, default 60 s, bounds the
    start). Two seconds, not less: the echo itself must fit in it on a loaded machine."""
    added = await client.call(
        "mcp.add", {"name": "toy", **stdio("--slow-start", "3", timeoutMs=2000)}
    )
    assert added["state"] == "ready"
    await set_rules(client, {"tool": "mcp_toy__*", "decision": "allow"})
    result = await run_calling(client, fake, log, "mcp_toy__echo", {"text": "hi"})
    assert result["isError"] is False and "hi" in result["content"][0]["text"]
