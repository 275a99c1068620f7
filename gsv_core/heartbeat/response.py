"""Which heartbeat replies reach a person.

Only a reply that is exactly `HEARTBEAT_OK` once trimmed is the agent's "nothing to
report" and is kept back; anything else, however short, is an alert and is delivered
(the original suppressed every reply of 300 characters or less). A text already
delivered for the agent within 24 hours is not sent again.
"""

from __future__ import annotations

from typing import Final

from gsv_core.workspace.prompt import HEARTBEAT_OK

DUPLICATE_WINDOW_MS: Final = 24 * 3_600_000

# why a reply was not delivered
ACKNOWLEDGED: Final = "heartbeat_ok"
EMPTY_REPLY: Final = "empty_reply"
DUPLICATE: Final = "duplicate"
TARGET_NONE: Final = "target_none"
NO_TARGET: Final = "no_target"


def held_back(
    reply: str, last_text: str | None, last_sent_at: int | None, now_ms: int
) -> str | None:
    """Why `reply` is not delivered (None: deliver it)."""
    text = reply.strip()
    if text == HEARTBEAT_OK:
        return ACKNOWLEDGED
    if not text:
        return EMPTY_REPLY
    recent = last_sent_at is not None and now_ms - last_sent_at < DUPLICATE_WINDOW_MS
    if recent and text == last_text:
        return DUPLICATE
    return None
