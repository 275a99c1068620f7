"""What the channels need from the gateway, as a Protocol (the channels package never
imports the gateway or the agent)."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any
from typing import Protocol


@dataclass(frozen=True)
class ChannelTurn:
    """A channel message on its way to the chat pipeline."""

    key: str  # the session it was routed to
    text: str  # as the model reads it: transcriptions and the quoted reply added
    raw_text: str  # as the sender wrote it: commands and directives are read from this
    run_id: str
    context: dict[str, Any]  # the run's channelContext: where the answer goes, who asked
    images: list[dict[str, Any]]


class ChannelHost(Protocol):
    """What the manager needs from the gateway."""

    def config(self) -> dict[str, Any]: ...

    def now_ms(self) -> int: ...

    async def dispatch(self, turn: ChannelTurn) -> dict[str, Any]:
        """Run the chat pipeline for a channel message; the chat.send-style result."""
        ...

    async def run_status(self, key: str, run_id: str) -> tuple[str, dict[str, Any] | None]: ...

    async def resume(self, key: str, run_id: str, context: dict[str, Any]) -> str: ...

    async def allow_sender(self, channel: str, sender_id: str, owner: bool = False) -> None:
        """Add a sender to `channels.<channel>.allowFrom` (pairing approval), and with
        `owner` to its `owners` too."""
        ...

    def external_peer(self, channel: str, account_id: str) -> Any | None:
        """The connection of an external (WebSocket) adapter serving this account."""
        ...

    async def store_image(self, key: str, data: bytes, mime_type: str) -> dict[str, Any]: ...

    async def transcribe(self, data: bytes, mime_type: str) -> str | None: ...

    # tool approvals: what the buttons on approval prompts need
    def approval_outcome(self, approval_id: str) -> Awaitable[str] | None:
        """How a pending approval ends (approved, denied or expired); None if it is not
        pending. Called while it is pending, so a quick answer is not missed."""
        ...

    def answer_approval(self, approval_id: str, decision: str, context: dict[str, Any]) -> str:
        """Answer an approval from a channel sender (`context` as a run's channelContext,
        with `senderId`): the same rules as a "yes"/"no" reply. Returns what to tell them."""
        ...
