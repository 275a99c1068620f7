"""`chat.send` (spec 6.1, seed 001): slash commands run at once, directive-only messages
are acknowledged (and remembered for the next message, fix of 18.20), everything else
goes to the session, which stores it before this answers. A queued message says so
(`queued: true`, fix of 18.19)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gsv_core.agent.command_runner import run_command
from gsv_core.agent.commands import parse_command
from gsv_core.agent.directives import Directives, directive_ack, is_directive_only, parse_directives
from gsv_core.agent.session import SessionActor
from gsv_core.protocol import events
from gsv_core.protocol import methods as m
from gsv_core.protocol.schemas.chat import ChatSendParams
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router

if TYPE_CHECKING:
    from gsv_core.gateway.app import Gateway


def register(router: Router, gateway: Gateway) -> None:
    async def chat_send(ctx: RequestContext, params: ChatSendParams) -> dict[str, Any]:
        key = gateway.sessions.canonical(params.sessionKey)
        actor = await gateway.sessions.actor(key)
        command = parse_command(params.message)
        if command is not None:
            return (await run_command(actor, command)).to_result()
        directives = _directives(actor, params.message)
        if is_directive_only(directives):
            return await _directive_only(actor, directives)
        overrides = directives.to_result() or {}
        sent = await actor.send(directives.cleaned, params.runId, overrides=overrides)
        result: dict[str, Any] = {"status": "started", "runId": sent.run_id, "queued": sent.queued}
        if sent.queued:
            result["queuePosition"] = sent.position
        if overrides:
            result["directives"] = overrides
        return result

    router.add(m.CHAT_SEND, chat_send, ChatSendParams)
    gateway.events.update({events.CHAT, events.CHAT_TOOL, events.SESSION_NOTICE})


def _directives(actor: SessionActor, text: str) -> Directives:
    directives = parse_directives(text)
    if directives.needs_fallback_provider:  # a bare model id: keep the session's provider
        directives = parse_directives(text, actor.effective_model()[0])
    return directives


async def _directive_only(actor: SessionActor, directives: Directives) -> dict[str, Any]:
    stored = directives.to_result()
    if stored:
        await actor.set_pending_overrides(stored)
    result: dict[str, Any] = {"status": "directive-only", "directives": stored or {}}
    ack = directive_ack(directives)
    if ack is not None:
        result["response"] = ack
    return result
