"""Always allow from the page: a node command the policy asks about offers the rule that
would cover it (`alwaysAllow`); the button answers with remember "always", the call runs,
and the rule is in `toolApproval.allow`, so the next such call does not ask."""

from __future__ import annotations

import json

from playwright.async_api import Page
from playwright.async_api import expect

from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import ToolCall
from tests.fakes.llm_server import reply
from tests.gateway.test_foreign_chat import BASH
from tests.gateway.test_nodes import next_event
from tests.gateway.test_nodes import node_socket
from tests.web.conftest import BROWSER_LOOP
from tests.web.conftest import WebGateway
from tests.web.conftest import messages
from tests.web.conftest import send

pytestmark = BROWSER_LOOP


async def test_always_allow_adds_the_offered_rule_and_runs_the_call(
    page: Page, web: WebGateway, llm: FakeLLMServer
) -> None:
    node = await node_socket(web.gateway, "n1", tools=[BASH])
    try:
        command = {"command": "git commit -m notes"}
        llm.enqueue(reply(ToolCall("n1__Bash", command)), reply("Committed."))
        await send(page, "commit my notes")
        approval = page.get_by_test_id("approval")
        always = approval.get_by_test_id("approve-always")
        await expect(always).to_have_text("Always allow git commit")
        await always.click()
        invoke = await next_event(node, "tool.invoke")
        assert invoke["args"] == command
        await node.send(json.dumps({"type": "req", "id": "r", "method": "tool.result",
            "params": {"callId": invoke["callId"], "result": "1 file changed"}}))  # fmt: skip
        await expect(messages(page, "assistant").last).to_contain_text("Committed.")
        await expect(approval).to_contain_text("from now on: git commit")
        await expect(always).to_have_count(0)
        allowed = (await web.call("config.get", {"path": "toolApproval.allow"}))["value"]
        assert "git commit" in json.dumps(allowed)
    finally:
        await node.close()


async def test_a_call_no_rule_can_cover_offers_no_always_button(
    page: Page, web: WebGateway, llm: FakeLLMServer
) -> None:
    """A gateway tool asked about by a config rule has no program rule to offer: Allow,
    Allow for this session and Deny only."""
    rule = {"id": "ask-config", "tool": "gsv__ConfigGet", "decision": "ask", "reason": "a test"}
    await web.call("config.set", {"path": "toolApproval.rules", "value": [rule]})
    llm.enqueue(reply(ToolCall("gsv__ConfigGet", {"path": "model.id"})), reply("Done."))
    await send(page, "read the model id")
    approval = page.get_by_test_id("approval")
    await expect(approval.get_by_test_id("approve-once")).to_be_visible()
    await expect(approval.get_by_test_id("approve-always")).to_have_count(0)
    await approval.get_by_test_id("approve-deny").click()
    await expect(messages(page, "assistant").last).to_contain_text("Done.")
