"""`gsv__Message` (docs/tools.md#gateway-native-tools): send a message to a channel peer. Without
`channel`/`to` it answers where the calling run came from, else where the calling
session last heard from a channel (not whatever ran last)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any
from typing import Literal

from pydantic import Field
from pydantic import ValidationError

from gsv_core.agent.tools import ToolCallContext
from gsv_core.channels.base import Peer
from gsv_core.errors import InvalidParams
from gsv_core.gateway.native_registry import NativeArgs
from gsv_core.gateway.native_registry import NativeTool
from gsv_core.gateway.native_registry import NativeToolRegistry
from gsv_core.pairing import sender_key

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


@dataclass(frozen=True)
class Target:
    channel: str
    account: str
    peer: Peer


def resolve_target(args: MessageArgs, current: dict[str, Any]) -> Target:
    """Where a message goes: the fields given, the rest from `current` (the calling
    run's channel context) when on its channel. Raises InvalidParams when unknown."""
    channel = args.channel or current.get("channel")
    if not channel:
        raise InvalidParams("channel is required (no current channel context available)")
    same_channel = channel == current.get("channel")
    peer_wire = current.get("peer") if same_channel else None
    to = args.to or (peer_wire or {}).get("id")
    if not to:
        raise InvalidParams("to (peer ID) is required: this session has no peer on that channel")
    kind = (
        args.peerKind
        or ((peer_wire or {}).get("kind") if same_channel and not args.to else None)
        or "dm"
    )
    account = args.accountId or (current.get("accountId") if same_channel else None) or "default"
    return Target(channel, account, Peer(kind, to))


def current_context(gateway: Gateway, ctx: ToolCallContext) -> dict[str, Any]:
    """The conversation a run answers: where it came from, else where its session last
    heard from a channel."""
    return ctx.channel_context or gateway.channels.inbox.last_context.get(ctx.session_key) or {}


def reaches_elsewhere(gateway: Gateway, raw: dict[str, Any], ctx: ToolCallContext) -> bool:
    """Whether a gsv__Message call would reach someone other than the calling
    conversation and the channel's owners and allowFrom entries (a wildcard names
    nobody). Arguments the tool would refuse reach nobody."""
    try:
        args = MessageArgs.model_validate(raw)
        current = current_context(gateway, ctx)
        target = resolve_target(args, current)
    except (ValidationError, InvalidParams):
        return False
    here = current.get("peer") or {}
    if target.channel == current.get("channel") and target.peer.id == here.get("id"):
        return False
    settings = gateway.channels.settings(target.channel)
    known = [str(e) for key in ("owners", "allowFrom") for e in settings.get(key) or []]
    keys = {sender_key(target.channel, entry) for entry in known if entry != "*"}
    return sender_key(target.channel, target.peer.id) not in keys


def register(registry: NativeToolRegistry, gateway: Gateway) -> None:
    async def message(args: MessageArgs, ctx: ToolCallContext) -> dict[str, Any]:
        target = resolve_target(args, current_context(gateway, ctx))
        peer = target.peer
        ids = await gateway.channels.outbox.send_text(
            target.channel, target.account, peer, args.text, reply_to=args.replyToId
        )
        return {"sent": True, "channel": target.channel, "to": peer.id, "peerKind": peer.kind,
                "accountId": target.account, "messageIds": ids}  # fmt: skip

    registry.add(
        NativeTool(
            "gsv__Message",
            "Send a message to a channel or user. Unset fields default to the conversation "
            "this run came from.",
            MessageArgs,
            message,
        )
    )
