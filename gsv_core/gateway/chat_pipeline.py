"""What happens to a message for the agent, whoever sent it:
a slash command runs at once; a directive-only message is acknowledged and remembered
for the next message; anything else is stored in its session and answered
by a run. Used by `chat.send` and by the channels' inbound pipeline."""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from gsv_core.agent.command_runner import run_command
from gsv_core.agent.commands import parse_command
from gsv_core.agent.directives import Directives
from gsv_core.agent.directives import directive_ack
from gsv_core.agent.directives import is_directive_only
from gsv_core.agent.directives import parse_directives
from gsv_core.agent.session import SessionActor
from gsv_core.errors import InvalidParams
from gsv_core.errors import NotFound
from gsv_core.gateway.approval_answers import answer
from gsv_core.protocol.messages import ImageBlock

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway


async def process_message(
    gateway: Gateway,
    key: str,
    text: str,
    run_id: str | None = None,
    *,
    command_text: str | None = None,
    context: dict[str, Any] | None = None,
    images: list[ImageBlock] | None = None,
    channel: bool = False,
) -> dict[str, Any]:
    """The chat.send result for `text` sent to session `key`. `command_text` is what is
    checked for commands and directives when it differs from what the agent reads (a
    channel's raw text versus its enveloped text). Runs wait while this works
    (gsv_core.agent.ack_first), except while a command runs: it may take long."""
    acks = gateway.sessions.acks
    with acks.ack():
        actor = await gateway.sessions.actor(key)
        raw = command_text if command_text is not None else text
        answered = await approval_answer(gateway, key, raw, context)
        if answered is not None:
            return answered
        command = parse_command(raw)
        if command is not None:
            with acks.aside():
                return (await run_command(actor, command, channel=channel)).to_result()
        return await _store(actor, text, raw, run_id, command_text, context, images)


async def _store(
    actor: SessionActor,
    text: str,
    raw: str,
    run_id: str | None,
    command_text: str | None,
    context: dict[str, Any] | None,
    images: list[ImageBlock] | None,
) -> dict[str, Any]:
    """A message that is not a command: remembered directives, or stored and run."""
    directives = _directives(actor, raw)
    if is_directive_only(directives) and not images:
        return await _directive_only(actor, directives)
    overrides = directives.to_result() or {}
    body = directives.cleaned if command_text is None else _strip_directives(text, raw, directives)
    sent = await actor.send(body, run_id, overrides=overrides, images=images, context=context)
    result: dict[str, Any] = {"status": "started", "runId": sent.run_id}
    if sent.queued:  # only then: a client of the original checks that `queued` is absent
        result.update(queued=True, queuePosition=sent.position)
    if overrides:
        result["directives"] = overrides
    return result


def _directives(actor: SessionActor, text: str) -> Directives:
    directives = parse_directives(text)
    if directives.needs_fallback_provider:  # a bare model id: keep the session's provider
        directives = parse_directives(text, actor.effective_model()[0])
    return directives


def _strip_directives(text: str, raw: str, directives: Directives) -> str:
    """The agent's text with the raw text's directives removed (the envelope kept)."""
    if not directives.had_any or raw not in text:
        return text
    return text.replace(raw, directives.cleaned, 1)


async def _directive_only(actor: SessionActor, directives: Directives) -> dict[str, Any]:
    stored = directives.to_result()
    if stored:
        await actor.set_pending_overrides(stored)
    result: dict[str, Any] = {"status": "directive-only", "directives": stored or {}}
    ack = directive_ack(directives)
    if ack is not None:
        result["response"] = ack
    return result


# reply -> (decision, remember); "always" also adds the approval's rules
APPROVE_WORDS = {"yes": ("allow", None), "no": ("deny", None), "always": ("allow", "always")}


async def approval_answer(
    gateway: Gateway, key: str, text: str, context: dict[str, Any] | None
) -> dict[str, Any] | None:
    """A bare "yes", "always" or "no" answers the oldest approval it may answer: from a
    client any asked in the session; from a channel only one raised by a run of that same
    conversation, and only from an owner (PendingApproval.answerable_from). Anything else
    -- or the same words from anyone else -- is an ordinary message and is queued, never
    dropped."""
    word = APPROVE_WORDS.get(text.strip().lower())
    if word is None:
        return None
    pending = [a for a in gateway.approvals.asked_in(key) if a.answerable_from(context)]
    if not pending:
        return None
    decision, remember = word
    if remember == "always" and not pending[0].decision.always:
        return {"status": "paused", "runId": pending[0].run_id, "approvalId": pending[0].id,
                "response": NO_RULE}  # fmt: skip
    approval, added = await answer(gateway, pending[0].id, decision, remember)
    response = _answered(decision, approval.tool)
    if added:
        response += f" Always allowed from now on: {', '.join(added)}."
    return {"status": "paused", "runId": approval.run_id, "approvalId": approval.id,
            "response": response}  # fmt: skip


def approval_reminder(gateway: Gateway, key: str, result: dict[str, Any]) -> dict[str, Any]:
    """A message queued while the session waits for an approval is kept (it runs after),
    and the answer also says why nothing happens yet, as the original did: `status:
    "paused"` with its reminder text (a client of the original shows it), plus `queued`."""
    pending = gateway.approvals.asked_in(key)
    if result.get("status") != "started" or not result.get("queued") or not pending:
        return result
    oldest = pending[0]
    reminder = (
        f"Run is paused waiting for tool approval ({oldest.id}) for {oldest.tool}.\n"
        'Reply with "yes" to approve or "no" to deny.'
    )
    return {**result, "status": "paused", "approvalId": oldest.id, "response": reminder}


NOT_OWNER = "Only the owner can approve this, in the conversation that asked."
NO_RULE = 'No rule can cover this call; reply "yes" to run it once or "no".'
ALREADY_ENDED = "That approval already ended."


def answer_approval_press(
    gateway: Gateway, approval_id: str, decision: str, context: dict[str, Any]
) -> str:
    """An Allow / Deny button pressed on a messenger: the rules of a "yes"/"no" reply
    (only an owner, in the conversation that asked), for the approval the button belongs
    to. Returns the short answer shown to whoever pressed it."""
    try:
        if not gateway.approvals.get(approval_id).answerable_from(context):
            return NOT_OWNER
        approval = gateway.approvals.resolve(approval_id, decision)
    except (NotFound, InvalidParams):
        return ALREADY_ENDED
    return _answered(decision, approval.tool)


def _answered(decision: str, tool: str) -> str:
    return f"{'Approved' if decision == 'allow' else 'Denied'} {tool}."
