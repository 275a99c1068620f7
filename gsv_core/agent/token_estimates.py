"""A session's history size in estimated tokens, without estimating every message again
on every model call.

Each step asks whether the request still fits the context window (`needs_compaction`),
which estimates each message by its JSON length: over a long session that was the one
per-turn cost that grew with the history. A message's estimate is kept for as long as the
message object is in the history (stored messages are never changed in place: a change
replaces the list or the message), so a step estimates only what is new.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gsv_core.agent.compaction import estimate_tokens
from gsv_core.agent.per_message import PerMessage


class TokenEstimates:
    def __init__(self) -> None:
        self._estimates: PerMessage[int] = PerMessage()

    def total(self, messages: Iterable[Any]) -> int:
        """The estimates of `messages` added up (`compaction.estimate_tokens` of each);
        entries of messages no longer passed in are dropped."""
        return sum(self._estimates.each(messages, estimate_tokens))

    def forget(self) -> None:
        """Drop every entry (the history was released)."""
        self._estimates.forget()
