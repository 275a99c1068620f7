"""A `tool.request` (a call made by hand from another client) on the session shown: its
`chat.tool` events carry no run (runId null). The page shows the call's block and is not
left "working" on a run that never ends."""

from __future__ import annotations

import json

from playwright.async_api import Page
from playwright.async_api import expect

from tests.gateway.test_nodes import next_event
from tests.gateway.test_nodes import node_socket
from tests.web.conftest import BROWSER_LOOP
from tests.web.conftest import WebGateway
from tests.web.conftest import current_session

pytestmark = BROWSER_LOOP


async def test_a_call_by_hand_shows_its_block_and_leaves_the_page_idle(
    page: Page, web: WebGateway
) -> None:
    node = await node_socket(web.gateway, "n1")
    try:
        params = {"callId": "by-hand", "tool": "n1__Read", "args": {"path": "notes.txt"},
                  "sessionKey": await current_session(page)}  # fmt: skip
        await web.call("tool.request", params)
        invoke = await next_event(node, "tool.invoke")
        await node.send(json.dumps({"type": "req", "id": "r", "method": "tool.result",
            "params": {"callId": invoke["callId"], "result": "line one\nline two"}}))  # fmt: skip
        block = page.locator('[data-testid="tool-call"][data-tool="n1__Read"]')
        await expect(block).to_have_attribute("data-status", "done")
        await expect(block.get_by_test_id("tool-result")).to_contain_text("line one\nline two")
        await expect(page.get_by_test_id("stop")).to_be_hidden()  # nothing is running
    finally:
        await node.close()
