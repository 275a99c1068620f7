"""Growing the allowlist from the prompt on a real gateway and node: "always" stores a rule
in toolApproval.allow and the same program runs unasked next time; a reply "always"
does the same; an unanswered approval tells the model the allow line; bad settings are
refused with a clear 400."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gsv_core.client import GatewayClient
from gsv_core.errors import InvalidParams
from gsv_core.gateway.server import RunningGateway
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.approval.test_flow import approval_event
from tests.approval.test_flow import node
from tests.approval.test_flow import tool_result
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call


def approvals(log: EventLog) -> list[dict[str, Any]]:
    return [p for n, p in log.events if n == "tool.approval"]


async def test_always_adds_a_rule_and_the_program_then_runs_unasked(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    """tool.approve remember=always: the rule is stored and listed in the config; a
    rule set there (`touch`) lets the next `touch` run without a prompt."""
    fake.enqueue(call("n1__Bash", {"command": "touch made.txt"}))
    fake.enqueue("ok")
    fake.enqueue(call("n1__Bash", {"command": "touch also.txt"}))
    fake.enqueue("ok again")
    async with node(gw.url, tmp_path):
        first = (await send(client, "one"))["runId"]
        request = await approval_event(log)
        assert request["alwaysAllow"] == ["touch made.txt"]
        answer = await client.call("tool.approve", {"approvalId": request["approvalId"],
                                                    "decision": "allow", "remember": "always"})  # fmt: skip
        assert answer["rulesAdded"] == ["touch made.txt"]
        await log.ended(first)
        allow = await client.call("config.get", {"path": "toolApproval.allow"})
        assert allow["value"] == ["touch made.txt"]
        await client.call("config.set", {"path": "toolApproval.allow", "value": ["touch"]})
        second = (await send(client, "two"))["runId"]
        assert (await log.ended(second))["state"] == "final"
    assert (tmp_path / "made.txt").exists() and (tmp_path / "also.txt").exists()
    assert [a["state"] for a in approvals(log)] == ["pending", "approved"]


async def test_always_is_refused_where_no_rule_is_offered(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    """Inline code has no "always": the request says so (400) and still waits; a reply
    "always" gets a hint, then "no" refuses."""
    fake.enqueue(call("n1__Bash", {"command": "python3 -c 'print(1)'"}))
    fake.enqueue("fine")
    async with node(gw.url, tmp_path):
        run = (await send(client, "go"))["runId"]
        request = await approval_event(log)
        assert request["alwaysAllow"] == []
        with pytest.raises(InvalidParams, match="allow it once"):
            await client.call("tool.approve", {"approvalId": request["approvalId"],
                                               "decision": "allow", "remember": "always"})  # fmt: skip
        reply = await send(client, "always")
        assert reply["status"] == "paused" and "run it once" in reply["response"]
        assert (await send(client, "no"))["status"] == "paused"
        await log.ended(run)
    assert "denied by user" in tool_result(fake)["content"][0]["text"]
    assert (await client.call("config.get", {"path": "toolApproval.allow"}))["value"] == []


async def test_a_reply_always_approves_and_remembers(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    """A bare "always" from the owner answers yes and stores the rule."""
    fake.enqueue(call("n1__Bash", {"command": "mkdir -p build/out"}))
    fake.enqueue("made")
    async with node(gw.url, tmp_path):
        run = (await send(client, "make the dir"))["runId"]
        paused = await approval_event(log)
        prompt = next(p for n, p in log.events if n == "chat" and p.get("state") == "paused")
        assert '"always" to also allow mkdir' in prompt["message"]["content"][0]["text"]
        reply = await send(client, "always")
        assert "Always allowed from now on: mkdir" in reply["response"]
        assert reply["approvalId"] == paused["approvalId"]
        await log.ended(run)
    assert (tmp_path / "build" / "out").is_dir()
    assert (await client.call("config.get", {"path": "toolApproval.allow"}))["value"] == ["mkdir"]


async def test_an_unanswered_approval_names_the_command_and_the_allow_line(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    """Nobody watching (a cron run): after timeoutMs the model reads what was refused and
    the `gsv approvals allow ...` line that would let it run next time."""
    await client.call("config.set", {"path": "toolApproval.timeoutMs", "value": 1000})
    fake.enqueue(call("n1__Bash", {"command": "npm test"}))
    fake.enqueue("Could not run the tests.")
    async with node(gw.url, tmp_path):
        run = (await send(client, "run the tests"))["runId"]
        assert (await log.ended(run))["state"] == "final"
    text = tool_result(fake)["content"][0]["text"]
    assert "approval timed out" in text and "npm test" in text
    assert "gsv approvals allow npm test" in text


@pytest.mark.parametrize(
    ("path", "value", "words"),
    [
        ("toolApproval.mode", "strict", "allowlist"),
        ("toolApproval.mode", 1, "allowlist"),
        ("toolApproval.timeoutMs", 10, "1000"),
        ("toolApproval.timeoutMs", "5s", "expects a whole number"),
        ("toolApproval.maxCommandBytes", 0, "1024"),
        ("toolApproval.allow", ["rm $(x)"], "cannot read"),
        ("toolApproval.allow", "git commit", "list"),
        ("toolApproval.strictness", "high", "strictness"),
    ],
)
async def test_bad_approval_settings_are_refused_clearly(
    client: GatewayClient, path: str, value: Any, words: str
) -> None:
    """A wrong value is a 400 naming the field and what it accepts; nothing is stored."""
    with pytest.raises(InvalidParams) as caught:
        await client.call("config.set", {"path": path, "value": value})
    assert words in caught.value.message
    assert (await client.call("config.get", {"path": "toolApproval.mode"}))["value"] == "allowlist"
