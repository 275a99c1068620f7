"""Who a run acts for, and so what it may reach (docs/security.md).

Every run has an authority, read from the context it started with:

* **owner**: a client's run (CLI, TUI, web chat: no context), and a run started by a
  message from a sender listed in `channels.<name>.owners` (the channel inbox marks the
  context when the message arrives, comparing ids as the channel normalises them);
* **guest**: a run started by anyone else a channel lets in, whichever session it lands
  in (under `session.dmScope: main` a guest's message in the owner's main session is
  still a guest run);
* **system**: cron and heartbeat runs, the owner's own schedule.

Runs a run starts (a sub-agent, a background process's completion, a queued message)
carry its context, so they inherit its authority. A channel context that does not say
(stored before authorities existed) is a guest's: unknown means the lesser reach.

Standard library only: the channels, the agent loop and the gateway all read it.
"""

from __future__ import annotations

import re
from typing import Any

OWNER, GUEST, SYSTEM = "owner", "guest", "system"
KEY = "authority"  # the field of a run's context
GUESTS_DIR = "guests"  # a guest's workspace folder: guests/<channel>/<sender>/
_UNSAFE = re.compile(r"[^A-Za-z0-9._+@-]+")


def authority_of(context: dict[str, Any] | None) -> str:
    """The authority of a run that started with `context`."""
    if not context:
        return OWNER
    if isinstance(context.get("cron"), dict) or context.get(KEY) == SYSTEM:
        return SYSTEM
    if context.get("channel"):
        return OWNER if context.get(KEY) == OWNER else GUEST
    return OWNER


def is_guest(context: dict[str, Any] | None) -> bool:
    return authority_of(context) == GUEST


def conversation_of(context: dict[str, Any] | None) -> tuple[str, str] | None:
    """The channel conversation (channel, peer id) a run came from; None for a client's
    run and the system's (a cron job's delivery target is not where it came from)."""
    if authority_of(context) == SYSTEM or not context or not context.get("channel"):
        return None
    peer = context.get("peer") or {}
    return str(context["channel"]), str(peer.get("id"))


def guest_area(context: dict[str, Any]) -> str:
    """A guest's own folder in the agent's workspace: `guests/<channel>/<sender>`, each
    part made safe for a path (`+15551234567`, `U024BE7LH`, `bob_example.org`)."""
    channel = _safe(str(context.get("channel") or "unknown"))
    sender = context.get("senderId") or (context.get("peer") or {}).get("id") or "unknown"
    return f"{GUESTS_DIR}/{channel}/{_safe(str(sender))}"


def _safe(part: str) -> str:
    cleaned = _UNSAFE.sub("_", part).strip(".") or "_"
    return cleaned[:64]
