"""A tool call waiting for your yes or no (`tool.approval`, issues 13 and 29): what would
run, why it asks, and the choices: Allow once, Always allow `git commit` (when the
gateway offers a rule for the call: `alwaysAllow`), Deny.

The prompt never takes focus by itself: an Enter meant for the composer must not approve
`rm -rf`. Click a button, or Tab to it. Typing "yes" or "no" in the composer works too
(the gateway reads those replies, and "always"). When the approval is settled, by anyone, from any
client, the buttons go and the outcome stays on screen.
"""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Button
from textual.widgets import Static

from gsv_cli.safe_text import plain_content

# the wire's settled states and how the prompt says them
OUTCOMES = {
    "approved": "✓ Approved",
    "denied": "✗ Denied",
    "expired": "✗ Expired: nobody answered in time",
    "cancelled": "✗ Cancelled: the run stopped",
}


class ApprovalPrompt(Widget):
    """One pending approval; `settle()` turns it into a line saying how it ended."""

    class Answered(Message):
        """A button was pressed: the app sends `tool.approve`."""

        def __init__(self, prompt: ApprovalPrompt, decision: str, remember: str | None) -> None:
            super().__init__()
            self.prompt = prompt
            self.decision = decision
            self.remember = remember

    def __init__(self, approval: dict[str, Any]) -> None:
        super().__init__(classes="approval")
        self.approval_id = str(approval.get("approvalId", ""))
        self.run_id = str(approval.get("runId", ""))
        self.tool = str(approval.get("tool", "?"))
        self.summary = str(approval.get("summary") or "")
        self.reason = str(approval.get("reason") or "")
        self.always = [str(rule) for rule in approval.get("alwaysAllow") or []]
        self.leaves_sandbox = approval.get("leavesSandbox") is True
        self.outcome: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(plain_content(self.describe()), classes="approval-text")
        with Horizontal(classes="approval-buttons"):
            yield Button("Allow once", id="allow", variant="success", compact=True)
            if self.always:
                label = plain_content(f"Always allow {', '.join(self.always)}")
                yield Button(label, id="allow-always", compact=True)
            yield Button("Deny", id="deny", variant="error", compact=True)

    def describe(self) -> str:
        lines = [f"Approval needed ({self.approval_id}): {self.tool}"]
        if self.summary:
            lines.append(self.summary)
        if self.reason:
            lines.append(f"Why: {self.reason}")
        if self.leaves_sandbox:
            from gsv_core.protocol.sandbox_info import LEAVES_SANDBOX

            lines.append(LEAVES_SANDBOX)
        if self.outcome is not None:
            lines.append(OUTCOMES.get(self.outcome, self.outcome))
        else:
            words = '"yes" / "always" / "no"' if self.always else '"yes" / "no"'
            lines.append(f"Allow or deny below, or reply {words}.")
        return "\n".join(lines)

    @property
    def pending(self) -> bool:
        return self.outcome is None

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if not self.pending:
            return
        decision = "deny" if event.button.id == "deny" else "allow"
        remember = "always" if event.button.id == "allow-always" else None
        self.post_message(self.Answered(self, decision, remember))

    async def settle(self, outcome: str) -> None:
        """The approval ended (`approved`, `denied`, `expired`, `cancelled`): drop the buttons,
        say so."""
        if not self.pending:
            return
        self.outcome = outcome
        self.set_class(True, f"-{outcome}")
        await self.query(".approval-buttons").remove()
        self.query_one(".approval-text", Static).update(plain_content(self.describe()))
