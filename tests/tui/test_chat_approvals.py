"""Approvals in the chat TUI (buttons, deny, pending ones, expiry, stop), and heartbeat
alerts."""

from __future__ import annotations

from textual.pilot import Pilot
from textual.widgets import Button

from gsv_cli.tui.app import ChatApp
from gsv_cli.tui.app import make_app
from gsv_cli.tui.widgets.approval import ApprovalPrompt
from gsv_cli.tui.widgets.messages import ToolBlock
from gsv_cli.tui.widgets.messages import UserMessage
from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.tui.chat_screen import notices
from tests.tui.chat_screen import replies
from tests.tui.conftest import KEY
from tests.tui.conftest import SIZE
from tests.tui.conftest import URL_LABEL
from tests.tui.conftest import quick_client
from tests.tui.conftest import type_and_send
from tests.tui.conftest import wait_until
from tests.waiting import until


async def ask_for_config_reads(client: GatewayClient, fake: FakeProvider, reply: str) -> None:
    """A policy rule that makes gsv__ConfigGet wait for a human (no node needed), and a
    model that calls it, then says `reply`."""
    rule = {"id": "ask-config", "tool": "gsv__ConfigGet", "decision": "ask", "reason": "test"}
    if not client.connected:
        await client.connect()
    await client.call("config.set", {"path": "toolApproval.rules", "value": [rule]})
    fake.enqueue(call("gsv__ConfigGet", {"path": "model.id"}))
    fake.enqueue(reply)


def approval_prompts(app: ChatApp) -> list[ApprovalPrompt]:
    return list(app.query(ApprovalPrompt))


async def ask_in_chat(pilot: Pilot[None], app: ChatApp) -> ApprovalPrompt:
    """Send a message whose run asks for approval; the prompt that shows."""
    await wait_until(pilot, app.synced.is_set, "the session to load")
    await type_and_send(pilot, "read the model")
    await wait_until(pilot, lambda: approval_prompts(app), "the approval prompt")
    return approval_prompts(app)[0]


async def test_an_approval_shows_buttons_and_allow_runs_the_tool(
    app: ChatApp, client: GatewayClient, fake: FakeProvider
) -> None:
    """A tool call that asks shows its prompt (tool, reason) once, not also as a notice;
    Allow answers it, the prompt says Approved and the run goes on."""
    await ask_for_config_reads(client, fake, "Read it.")
    async with app.run_test(size=SIZE) as pilot:
        prompt = await ask_in_chat(pilot, app)
        assert prompt.tool == "gsv__ConfigGet" and "Why: test" in prompt.describe()
        assert not any("Approval needed" in text for text in notices(app)), "shown once"
        assert app.composer.has_focus, "the prompt does not steal focus"
        await pilot.click("#allow")
        await wait_until(pilot, lambda: "Read it." in replies(app), "the run to finish")
        assert prompt.outcome == "approved" and "✓ Approved" in prompt.describe()
        assert not prompt.query(Button), "a settled prompt has no buttons left"
        assert str(app.query(ToolBlock)[0].title).startswith("✓ ConfigGet")


async def test_deny_refuses_the_call(
    app: ChatApp, client: GatewayClient, fake: FakeProvider
) -> None:
    """Deny: the prompt says Denied and the tool block fails with "denied by user"."""
    await ask_for_config_reads(client, fake, "Fine, I will not.")
    async with app.run_test(size=SIZE) as pilot:
        await ask_in_chat(pilot, app)
        await pilot.click("#deny")
        await wait_until(pilot, lambda: "Fine, I will not." in replies(app), "the run to end")
        assert approval_prompts(app)[0].outcome == "denied"
        block = app.query(ToolBlock)[0]
        assert block.view.ok is False and "denied by user" in block.view.body()


async def test_a_pending_approval_shows_when_the_chat_opens_and_settles_from_elsewhere(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider
) -> None:
    """An approval asked before the chat opened shows on load; answering it from another
    client (`gsv approvals`) settles the prompt here too."""
    await ask_for_config_reads(client, fake, "Done.")
    await client.call("chat.send", {"sessionKey": KEY, "message": "read it"})

    async def asked() -> list[dict[str, object]]:
        approvals: list[dict[str, object]] = (await client.call("tool.approvals"))["approvals"]
        return approvals

    pending = await until(asked, "the approval to be asked")
    app = make_app(quick_client(gw.url), KEY, url_label=URL_LABEL)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        assert [p.approval_id for p in approval_prompts(app)] == [pending[0]["approvalId"]]
        await client.call(
            "tool.approve", {"approvalId": pending[0]["approvalId"], "decision": "allow"}
        )
        await wait_until(
            pilot, lambda: approval_prompts(app)[0].outcome == "approved", "the prompt to settle"
        )


async def test_answering_an_expired_approval_says_so(
    app: ChatApp, client: GatewayClient, fake: FakeProvider
) -> None:
    """Clicking Allow after the approval was settled elsewhere shows the gateway's error."""
    await ask_for_config_reads(client, fake, "Done.")
    async with app.run_test(size=SIZE) as pilot:
        prompt = await ask_in_chat(pilot, app)
        await app.answer_approval(prompt, "deny", None)  # someone else answered first
        await app.answer_approval(prompt, "allow", None)
        await wait_until(
            pilot,
            lambda: any("Cannot answer the approval" in t for t in notices(app)),
            "the error notice",
        )


async def test_a_heartbeat_alert_shows_in_the_main_session(
    app: ChatApp, client: GatewayClient, fake: FakeProvider
) -> None:
    """A heartbeat that finds something to say shows its words in the main session's chat."""
    fake.enqueue("The backup job failed last night.")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        await client.call(
            "workspace.write", {"path": "HEARTBEAT.md", "content": "- check the backup log\n"}
        )
        result = await client.call("heartbeat.trigger", {"agentId": "main"})
        assert result["ok"], result
        await wait_until(
            pilot,
            lambda: any("The backup job failed last night." in t for t in notices(app)),
            "the heartbeat notice",
        )
        assert any(t.startswith("**Heartbeat**") for t in notices(app))


async def test_stopping_the_run_cancels_its_approval_prompt(
    app: ChatApp, client: GatewayClient, fake: FakeProvider
) -> None:
    """Esc while an approval waits: the run stops and the prompt says Cancelled at once."""
    await ask_for_config_reads(client, fake, "never said")
    async with app.run_test(size=SIZE) as pilot:
        prompt = await ask_in_chat(pilot, app)
        await pilot.press("escape")
        await wait_until(pilot, lambda: prompt.outcome == "cancelled", "the prompt to settle")
        assert "Cancelled: the run stopped" in prompt.describe()
        assert (await client.call("tool.approvals"))["approvals"] == []


async def test_a_message_sent_while_an_approval_waits_is_queued_not_lost(
    app: ChatApp, client: GatewayClient, fake: FakeProvider
) -> None:
    """The gateway answers it `paused` and queued: the chat shows the reminder, keeps the
    message as queued, and shows its own reply once the approval let the first run end."""
    await ask_for_config_reads(client, fake, "Read it.")
    fake.enqueue("And the second answer.")
    async with app.run_test(size=SIZE) as pilot:
        await ask_in_chat(pilot, app)
        await type_and_send(pilot, "and one more thing")
        await wait_until(pilot, lambda: any("Approval" in t or "approval" in t
                                            for t in notices(app)), "the reminder")  # fmt: skip
        queued = [m for m in app.query(UserMessage) if m.queue_position is not None]
        assert [m.text for m in queued] == ["and one more thing"]  # a message, queued
        await pilot.click("#allow")
        await wait_until(pilot, lambda: "And the second answer." in replies(app), "the reply")
        assert "Read it." in replies(app)
