"""`chat.send` (docs/protocol.md#methods): the message goes through the chat pipeline, which
stores it before this answers. A queued message says so (`queued: true` and
`queuePosition`); a message that started a run leaves both out, as the original did.
While the session waits for a tool approval the queued message's answer is also
`status: "paused"` with the original's reminder."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gsv_core.gateway.chat_pipeline import approval_reminder, process_message
from gsv_core.gateway.handlers.routes import Routes
from gsv_core.protocol import events
from gsv_core.protocol import methods as m
from gsv_core.protocol.schemas.chat import ChatSendParams
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway


def register(router: Router, gateway: Gateway) -> None:
    route = Routes(router)

    @route(m.CHAT_SEND, ChatSendParams)
    async def chat_send(ctx: RequestContext, params: ChatSendParams) -> dict[str, Any]:
        key = gateway.sessions.canonical(params.sessionKey)
        result = await process_message(gateway, key, params.message, params.runId)
        return approval_reminder(gateway, key, result)

    gateway.events.update({events.CHAT, events.CHAT_TOOL, events.SESSION_NOTICE})
