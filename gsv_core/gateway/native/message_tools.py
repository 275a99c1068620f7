"""`gsv__Message` (docs/tools.md#gateway-native-tools): send a message to a channel peer. Without
`channel`/`to` it answers where the calling run came from, else where the calling
session last heard from a channel (not whatever ran last)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from gsv_core.agent.tools import ToolCallContext
from gsv_core.channels.base import Peer
from gsv_core.errors import InvalidParams
from gsv_core.gateway.native_registry import NativeArgs, NativeTool, NativeToolRegistry

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway


class MessageArgs(NativeArgs):
    # unset ones default to the conversation this run came from (the description says so)
    text: str = Field(min_length=1, max_length=50_000)
    channel: str | None = Field(default=None, description='E.g. "telegram".')
    to: str | None = Field(default=None, description="Peer id (user, chat or channel).")
    peerKind: Literal["dm", "group", "channel", "thread"] | None = None
    accountId: str | None = None
    replyToId: str | None = None


def register(registry: NativeToolRegistry, gateway: Gateway) -> None:
    async def message(args: MessageArgs, ctx: ToolCallContext) -> dict[str, Any]:
        current = (
            ctx.channel_context or gateway.channels.inbox.last_context.get(ctx.session_key) or {}
        )
        channel = args.channel or current.get("channel")
        if not channel:
            raise InvalidParams("channel is required (no current channel context available)")
        same_channel = channel == current.get("channel")
        peer_wire = current.get("peer") if same_channel else None
        to = args.to or (peer_wire or {}).get("id")
        if not to:
            raise InvalidParams(
                "to (peer ID) is required: this session has no peer on that channel"
            )
        kind = (
            args.peerKind
            or ((peer_wire or {}).get("kind") if same_channel and not args.to else None)
            or "dm"
        )
        account = (
            args.accountId or (current.get("accountId") if same_channel else None) or "default"
        )
        peer = Peer(kind, to)
        ids = await gateway.channels.outbox.send_text(
            channel, account, peer, args.text, reply_to=args.replyToId
        )
        return {"sent": True, "channel": channel, "to": to, "peerKind": kind, "accountId": account,
                "messageIds": ids}  # fmt: skip

    registry.add(
        NativeTool(
            "gsv__Message",
            "Send a message to a channel or user. Unset fields default to the conversation "
            "this run came from.",
            MessageArgs,
            message,
        )
    )
