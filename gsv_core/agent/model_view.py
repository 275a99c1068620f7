"""What a model request is sent of a session's stored history, kept between its calls.

Each stored message becomes, for the model: nothing (a failed reply is left out), its
model form (a compaction summary reads as a user message), or itself, cut to an excerpt
when it is too big for the window (oversized.py). That is worked out once per message and
window (`PerMessage`), not on every call: every turn sends the whole history again, and a
walk of it per turn was the cost that grew with a session. An excerpt stays one object
from turn to turn, so its token estimate is kept too (token_estimates.py). Stored images
are only marked here; their bytes are read in for each request (run.py).

What each message became on the wire (its JSON in the provider's format) is kept here
too (`wire`, passed as `ModelRequest.memo`), for a history without images: a provider
encodes only the messages new since the last call (providers/chat_request.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gsv_core.agent.compaction import SUMMARY_ROLE
from gsv_core.agent.compaction import as_model_message
from gsv_core.agent.oversized import fit
from gsv_core.agent.per_message import PerMessage


@dataclass(frozen=True, slots=True)
class Sent:
    stored: dict[str, Any]  # the message as the history keeps it
    message: dict[str, Any]  # what the model is sent of it
    cut: int  # characters cut out for the window (0: sent whole)
    media: bool  # holds images kept in the media store, read in for each request


class ModelView:
    def __init__(self) -> None:
        self._sent: PerMessage[Sent | None] = PerMessage()
        self.wire: PerMessage[Any] = PerMessage()

    def sent(self, stored: list[dict[str, Any]], limit: int, reason: str) -> list[Sent]:
        """What the model is sent of each stored message, in order (failed replies left
        out), each cut to about `limit` tokens with `reason` in its note."""
        sent = self._sent.each(stored, lambda m: _sent(m, limit, reason), (limit, reason))
        return [entry for entry in sent if entry is not None]

    def forget(self) -> None:
        """Drop every entry (the history was released)."""
        self._sent.forget()
        self.wire.forget()


def _sent(stored: dict[str, Any], limit: int, reason: str) -> Sent | None:
    if stored.get("role") == "assistant" and stored.get("stopReason") == "error":
        return None
    form = as_model_message(stored) if stored.get("role") == SUMMARY_ROLE else stored
    message, cut = fit(form, limit, reason)
    return Sent(stored, message, cut, has_media(message))


def has_media(message: dict[str, Any]) -> bool:
    """Whether the message holds an image kept in the media store (by `mediaPath`)."""
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("mediaPath") for b in content
    )
