"""The chat in a browser: a streamed reply rendered as Markdown as it arrives, a tool call
block, and an approval answered from the page."""

from __future__ import annotations

import re

import pytest
from playwright.async_api import Locator
from playwright.async_api import Page
from playwright.async_api import expect

from tests.fakes.held_stream import held_stream
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import Thinking
from tests.fakes.llm_server import ToolCall
from tests.fakes.llm_server import reply
from tests.web.conftest import BROWSER_LOOP
from tests.web.conftest import MODEL_ID
from tests.web.conftest import WebGateway
from tests.web.conftest import messages
from tests.web.conftest import send

HOLD = "HELD-HERE"

pytestmark = BROWSER_LOOP


def running_stop(page: Page) -> Locator:
    """The stop button as a user can press it: shown and enabled."""
    return page.locator('[data-testid="stop"]:visible:enabled')


async def test_a_streamed_reply_renders_as_markdown_piece_by_piece(
    page: Page, web: WebGateway, llm: FakeLLMServer
) -> None:
    """The first piece of a reply shows (bold as <strong>) while the rest is still held at
    the model; once released, the fenced code block renders as pre > code and Stop goes."""
    async with held_stream(llm.port, HOLD.encode()) as proxy:
        await web.use_fake_model(f"http://127.0.0.1:{proxy.port}/v1")
        llm.enqueue(
            reply(
                "Here is **bold** text.",
                f"\n\n{HOLD} and then some code:\n\n",
                "```python\nprint('streamed')\n```\n",
            )
        )
        await send(page, "show me markdown")
        await proxy.wait_held()
        answer = messages(page, "assistant").last.locator(".md")
        await expect(answer.locator("strong")).to_have_text("bold")
        await expect(running_stop(page)).to_have_count(1)  # the run is still going
        # nothing past the hold has reached the gateway, so this cannot change under us
        await expect(answer).not_to_contain_text(HOLD)
        await expect(answer.locator("pre")).to_have_count(0)
        proxy.release()
        await expect(answer.locator("pre code")).to_contain_text("print('streamed')")
        await expect(answer).to_contain_text(f"{HOLD} and then some code:")
        await expect(answer.locator("strong")).to_have_text("bold")
        await expect(running_stop(page)).to_have_count(0)


async def test_a_tool_call_shows_as_a_block_with_its_arguments_and_result(
    page: Page, llm: FakeLLMServer
) -> None:
    """The model calls the native gsv__ConfigGet: a tool-call block names it, shows the
    arguments, the result and a duration, and ends done; the answer follows."""
    llm.enqueue(
        reply("Let me look.", ToolCall("gsv__ConfigGet", {"path": "model.id"})),
        reply("The model is ", f"{MODEL_ID}."),
    )
    await send(page, "which model are you?")
    block = page.locator('[data-testid="tool-call"][data-tool="gsv__ConfigGet"]')
    await expect(block).to_have_attribute("data-status", "done")
    await block.locator("summary").first.click()  # a <details>: open it as a user would
    await expect(block.get_by_test_id("tool-args")).to_be_visible()
    await expect(block.get_by_test_id("tool-args")).to_contain_text("model.id")
    await expect(block.get_by_test_id("tool-result")).to_contain_text(MODEL_ID)
    await expect(block.get_by_test_id("tool-duration")).not_to_be_empty()
    await expect(messages(page, "assistant").last).to_contain_text(f"The model is {MODEL_ID}.")


async def ask_to_read_the_model(
    page: Page, web: WebGateway, llm: FakeLLMServer, then: str
) -> Locator:
    """A rule makes gsv__ConfigGet ask; the model calls it, then says `then`. Sends a
    message from the page; the approval element, once shown."""
    rule = {"id": "ask-config", "tool": "gsv__ConfigGet", "decision": "ask", "reason": "a test"}
    await web.call("config.set", {"path": "toolApproval.rules", "value": [rule]})
    llm.enqueue(reply(ToolCall("gsv__ConfigGet", {"path": "model.id"})), reply(then))
    await send(page, "read the model id")
    approval = page.get_by_test_id("approval")
    await expect(approval).to_be_visible()
    return approval


async def test_an_approval_allowed_from_the_page_lets_the_run_finish(
    page: Page, web: WebGateway, llm: FakeLLMServer
) -> None:
    """A rule makes gsv__ConfigGet ask; the approval shows with its id, Allow once answers
    it (the buttons go, the decision shows), the tool runs and the reply arrives."""
    approval = await ask_to_read_the_model(page, web, llm, then="Allowed, and read it.")
    pending = (await web.call("tool.approvals"))["approvals"]
    assert [a["tool"] for a in pending] == ["gsv__ConfigGet"]
    await expect(approval).to_have_attribute("data-approval-id", pending[0]["approvalId"])
    await expect(approval).to_contain_text("gsv__ConfigGet")
    await approval.get_by_test_id("approve-once").click()
    await expect(messages(page, "assistant").last).to_contain_text("Allowed, and read it.")
    for button in ("approve-once", "approve-session", "approve-deny"):
        await expect(approval.get_by_test_id(button)).to_have_count(0)
    await expect(approval).to_contain_text(re.compile(r"allow|approv", re.IGNORECASE))
    block = page.locator('[data-testid="tool-call"][data-tool="gsv__ConfigGet"]')
    await expect(block).to_have_attribute("data-status", "done")
    assert (await web.call("tool.approvals"))["approvals"] == []


async def test_thinking_shows_folded_beside_the_answer(page: Page, llm: FakeLLMServer) -> None:
    """The model's reasoning (OpenAI-compatible `reasoning_content`) is a closed <details>
    holding that text; the answer shows as usual."""
    llm.enqueue(reply(Thinking("Weighing the options carefully."), "The answer is 42."))
    await send(page, "think first")
    await expect(messages(page, "assistant").last).to_contain_text("The answer is 42.")
    thinking = page.get_by_test_id("thinking").last
    await expect(thinking).to_contain_text("Weighing the options carefully.")
    await expect(thinking).to_have_js_property("open", False)


async def test_an_approval_denied_from_the_page_refuses_the_call(
    page: Page, web: WebGateway, llm: FakeLLMServer
) -> None:
    """Deny: the buttons go, the tool call ends in error without running, and the model
    gets the refusal and answers."""
    approval = await ask_to_read_the_model(page, web, llm, then="Understood, I will not read it.")
    await approval.get_by_test_id("approve-deny").click()
    await expect(messages(page, "assistant").last).to_contain_text("I will not read it.")
    await expect(approval.get_by_test_id("approve-once")).to_have_count(0)
    block = page.locator('[data-testid="tool-call"][data-tool="gsv__ConfigGet"]')
    await expect(block).to_have_attribute("data-status", "error")
    await expect(block.get_by_test_id("tool-result")).not_to_contain_text(MODEL_ID)
    tool_results = [m for m in llm.last_body["messages"] if m["role"] == "tool"]
    assert len(tool_results) == 1 and MODEL_ID not in str(tool_results[0]["content"])


@pytest.mark.parametrize("how", ["stop-button", "escape-key"])
async def test_stop_ends_a_run_while_it_streams(
    page: Page, web: WebGateway, llm: FakeLLMServer, how: str
) -> None:
    """Stop (the button, or Esc in the composer), pressed while a reply is mid-stream,
    ends the run: the rest never shows and the session is free for the next message."""
    async with held_stream(llm.port, HOLD.encode()) as proxy:
        await web.use_fake_model(f"http://127.0.0.1:{proxy.port}/v1")
        llm.enqueue(reply("Working on it", f" {HOLD} and never finishing."))
        await send(page, "a long job")
        await proxy.wait_held()
        answer = messages(page, "assistant").last
        await expect(answer).to_contain_text("Working on it")
        if how == "stop-button":
            await running_stop(page).click()
        else:
            await page.get_by_test_id("composer").press("Escape")
        await expect(running_stop(page)).to_have_count(0)
        llm.enqueue(reply("Ready for the next one."))
        await send(page, "next")  # behind a run still held, this would wait for the hold
        await expect(messages(page, "assistant").last).to_contain_text("Ready for the next one.")
        await expect(page.get_by_test_id("transcript")).not_to_contain_text(HOLD)


async def test_a_cut_stream_answered_otherwise_replaces_the_reply_text(
    page: Page, web: WebGateway, llm: FakeLLMServer
) -> None:
    """The first attempt streams "Forty two" and is cut; the second words it otherwise:
    while it still streams, the page shows its words in place of the first's."""
    async with held_stream(llm.port, HOLD.encode()) as proxy:
        await web.use_fake_model(f"http://127.0.0.1:{proxy.port}/v1")
        llm.enqueue(reply("Forty", " two", end="aborted"), reply("It is ", f"{HOLD} 42."))
        await send(page, "what is it?")
        await proxy.wait_held()
        answer = messages(page, "assistant").last.locator(".md")
        await expect(answer).to_have_text("It is")
        proxy.release()
        await expect(answer).to_have_text(f"It is {HOLD} 42.")
        await expect(messages(page, "assistant")).to_have_count(1)
