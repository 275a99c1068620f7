"""Pending approvals: tool calls waiting for a human's yes or no.

A waiting call holds a future; `resolve()` (the `tool.approve` RPC, a "yes"/"no" reply,
`gsv approvals approve`) settles it. Approvals expire *closed* after
`toolApproval.timeoutMs` (or the older `timeoutSeconds`): the tool then fails with
"approval timed out". "Remember for this session" approves the same exact
call again without asking; "always" is a rule in the config, added by the gateway
(`gsv_core.gateway.approval_answers`) before the approval is resolved.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from gsv_core.approval.binding import call_hash
from gsv_core.approval.policy import Decision
from gsv_core.authority import OWNER
from gsv_core.authority import authority_of
from gsv_core.errors import InvalidParams
from gsv_core.errors import NotFound
from gsv_core.protocol.excerpt import cut_strings
from gsv_core.protocol.excerpt import excerpt

# cancelled: the run that asked was stopped before anyone answered
APPROVED, DENIED, EXPIRED, CANCELLED = "approved", "denied", "expired", "cancelled"
DEFAULT_TIMEOUT = 300
# what a prompt shows of a call's line and of its arguments (each): a generated 1 MB
# command is judged and runs whole, but no prompt (a chat, a phone) is sent all of it
PREVIEW_CHARS = 2_000
PREVIEW_WHY = "not shown; the whole call is what runs"


@dataclass
class PendingApproval:
    id: str
    session_key: str
    run_id: str
    call_id: str
    tool: str
    args: dict[str, Any]
    decision: Decision
    requested_at: int
    expires_at: int
    # the conversation whose chat shows the prompt and whose "yes" answers it: the session
    # itself, or for a sub-agent's call the conversation that spawned it
    asked_in: str
    # the channel conversation (channel, peer id) whose run asked, None for a client's or
    # the system's: only an owner there may answer from a channel (clients answer any)
    where: tuple[str, str] | None = None
    outcome: asyncio.Future[str] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )

    def answerable_from(self, context: dict[str, Any] | None) -> bool:
        """Whether an answer arriving with `context` counts: from a client (no context)
        always; from a channel only from an owner in the conversation whose run asked."""
        if not context or not context.get("channel"):
            return True
        peer = context.get("peer") or {}
        here = (str(context.get("channel")), str(peer.get("id")))
        return authority_of(context) == OWNER and self.where == here

    def to_wire(self, state: str = "pending", full: bool = False) -> dict[str, Any]:
        """As every prompt gets it (long strings as excerpts), or `full`: the whole call,
        for an owner who asks to read it (`gsv approvals show`)."""
        summary, args, cut = self.decision.summary, self.args, 0
        if not full:
            summary = excerpt(summary, PREVIEW_CHARS, PREVIEW_WHY)
            args, cut = cut_strings(args, PREVIEW_CHARS, PREVIEW_WHY)
        wire = {
            "approvalId": self.id,
            "sessionKey": self.session_key,
            "runId": self.run_id,
            "callId": self.call_id,
            "tool": self.tool,
            "args": args,
            "summary": summary,
            "reason": self.decision.reason,
            "ruleId": self.decision.rule_id,
            # the rules "always allow" would add (empty: only "allow once" is offered)
            "alwaysAllow": list(self.decision.always),
            # approved, the command runs outside its node's sandbox (docs/sandbox.md)
            "leavesSandbox": self.decision.leaves_sandbox,
            "requestedAt": self.requested_at,
            "expiresAt": self.expires_at,
            "state": state,
        }
        # the prompt shows excerpts (docs/approvals.md#huge-calls)
        if cut or summary is not self.decision.summary:
            wire["previewCut"] = True
        return wire


class ApprovalService:
    def __init__(self, now_ms: Callable[[], int]) -> None:
        self._now = now_ms
        self._pending: dict[str, PendingApproval] = {}
        # (session key, where, call hash): "allow for this session" holds for the same
        # conversation's runs only (a guest's run in the owner's session gets none of it)
        self._remembered: set[tuple[str, tuple[str, str] | None, str]] = set()

    def remembered(
        self, session_key: str, tool: str, args: dict[str, Any], where: tuple[str, str] | None
    ) -> bool:
        return (session_key, where, call_hash(tool, args)) in self._remembered

    def open(
        self,
        session_key: str,
        run_id: str,
        call_id: str,
        tool: str,
        args: dict[str, Any],
        decision: Decision,
        timeout_s: float,
        *,
        asked_in: str | None = None,
        where: tuple[str, str] | None = None,
    ) -> PendingApproval:
        """A pending approval for one call of session `session_key`, asked in the
        conversation `asked_in` (default: that session), by a run from the channel
        conversation `where` (None: a client's or the system's)."""
        approval_id = secrets.token_hex(3)  # short enough to type on a phone
        while approval_id in self._pending:
            approval_id = secrets.token_hex(3)
        now = self._now()
        approval = PendingApproval(approval_id, session_key, run_id, call_id, tool, args, decision,
                                   now, now + int(timeout_s * 1000),
                                   asked_in or session_key, where)  # fmt: skip
        self._pending[approval_id] = approval
        return approval

    async def wait(self, approval: PendingApproval) -> str:
        """The outcome: approved, denied or expired (the approval is closed either way).
        If the waiting run is stopped, the approval ends `cancelled`, so prompts showing
        it settle now rather than at its deadline."""
        try:
            return await self.outcome(approval)
        except asyncio.CancelledError:
            if not approval.outcome.done():
                approval.outcome.set_result(CANCELLED)
            raise
        finally:
            self._pending.pop(approval.id, None)

    async def outcome(self, approval: PendingApproval) -> str:
        """How it ends, for anyone watching (e.g. a prompt with buttons): approved, denied,
        or expired at its deadline. Closes nothing."""
        remaining = max(0.0, (approval.expires_at - self._now()) / 1000)
        try:
            async with asyncio.timeout(remaining):
                return await asyncio.shield(approval.outcome)
        except TimeoutError:
            return EXPIRED

    def get(self, approval_id: str) -> PendingApproval:
        """A pending approval; 404 if unknown or closed."""
        approval = self._pending.get(approval_id.strip().lower())
        if approval is None or approval.outcome.done():
            raise NotFound(f"No pending approval {approval_id!r} (it may have expired)")
        return approval

    def resolve(
        self, approval_id: str, decision: str, remember: str | None = None
    ) -> PendingApproval:
        """Settle a pending approval (`decision` allow or deny); 404 if unknown or closed."""
        if decision not in ("allow", "deny"):
            raise InvalidParams("decision must be allow or deny")
        approval = self.get(approval_id)
        if decision == "allow" and remember == "session":
            remembered = (
                approval.session_key,
                approval.where,
                call_hash(approval.tool, approval.args),
            )
            self._remembered.add(remembered)
        approval.outcome.set_result(APPROVED if decision == "allow" else DENIED)
        return approval

    def pending(self, session_key: str | None = None) -> list[PendingApproval]:
        """Open approvals, oldest first (of one session, or all)."""
        return [
            a for a in self._pending.values()
            if not a.outcome.done() and session_key in (None, a.session_key)
        ]  # fmt: skip

    def asked_in(self, conversation: str) -> list[PendingApproval]:
        """Open approvals asked in a conversation, oldest first: its session's own and
        those of the sub-agents it spawned."""
        return [a for a in self._pending.values()
                if not a.outcome.done() and a.asked_in == conversation]  # fmt: skip

    def forget_session(self, session_key: str) -> None:
        self._remembered = {item for item in self._remembered if item[0] != session_key}
