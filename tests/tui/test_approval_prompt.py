"""The approval prompt's choices: Allow once, Always allow with the rule the
gateway offers, Deny; no "always" button when no rule is offered."""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import App
from textual.app import ComposeResult
from textual.widgets import Button

from gsv_cli.tui.widgets.approval import ApprovalPrompt

PENDING = {"approvalId": "ab12cd", "tool": "n1__Bash", "summary": "git commit -m x",
           "reason": "git commit is not a read-only git command"}  # fmt: skip


class PromptApp(App[None]):
    def __init__(self, approval: dict[str, Any]) -> None:
        super().__init__()
        self.approval = approval
        self.answers: list[tuple[str, str | None]] = []

    def compose(self) -> ComposeResult:
        yield ApprovalPrompt(self.approval)

    @on(ApprovalPrompt.Answered)
    def _answered(self, event: ApprovalPrompt.Answered) -> None:
        self.answers.append((event.decision, event.remember))


async def test_always_allow_offers_the_rule_and_answers_with_remember_always() -> None:
    """The button names the rule; pressing it answers allow + always."""
    app = PromptApp({**PENDING, "alwaysAllow": ["git commit"]})
    async with app.run_test() as pilot:
        labels = [str(b.label) for b in app.query(Button)]
        assert labels == ["Allow once", "Always allow git commit", "Deny"]
        assert '"always"' in app.query_one(ApprovalPrompt).describe()
        await pilot.click("#allow-always")
        await pilot.click("#allow")
        await pilot.pause()
    assert app.answers == [("allow", "always"), ("allow", None)]


async def test_without_a_rule_there_is_no_always_button() -> None:
    """Inline code and the like: only Allow once and Deny."""
    app = PromptApp({**PENDING, "alwaysAllow": []})
    async with app.run_test() as pilot:
        assert [b.id for b in app.query(Button)] == ["allow", "deny"]
        await pilot.click("#deny")
        await pilot.pause()
    assert app.answers == [("deny", None)]


async def test_a_prompt_that_lifts_the_sandbox_says_so() -> None:
    """`leavesSandbox`: approving runs the command outside the node's sandbox; the prompt
    says that before anyone answers (and not for a node without one)."""
    app = PromptApp({**PENDING, "leavesSandbox": True})
    async with app.run_test():
        assert "outside the node's sandbox" in app.query_one(ApprovalPrompt).describe()
    plain = PromptApp(PENDING)
    async with plain.run_test():
        assert "sandbox" not in plain.query_one(ApprovalPrompt).describe()
