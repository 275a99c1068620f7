"""What the chat TUI tests read off the screen: replies, notices, whether the app is idle."""

from __future__ import annotations

from gsv_cli.tui.app import ChatApp
from gsv_cli.tui.widgets.messages import AssistantMessage
from gsv_cli.tui.widgets.status import Activity


def replies(app: ChatApp) -> list[str]:
    return [reply.source for reply in app.query(AssistantMessage)]


def idle(app: ChatApp) -> bool:
    """No run in progress and the event that ended the last one fully shown (hiding the
    activity line is the last thing the app does for an event)."""
    return not app.chat.busy and not app.query_one(Activity).display


def notices(app: ChatApp) -> list[str]:
    return [str(n.text) for n in app.query(".notice")]  # type: ignore[attr-defined]
