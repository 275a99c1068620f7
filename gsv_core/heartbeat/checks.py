"""Why a scheduled heartbeat does not run. A skipped beat costs no model call;
a manual trigger skips these checks."""

from __future__ import annotations

from typing import Final

from gsv_core.workspace.prompt import heartbeat_file_is_empty

OUTSIDE_ACTIVE_HOURS: Final = "outside_active_hours"
NO_HEARTBEAT_FILE: Final = "no_heartbeat_file"
EMPTY_HEARTBEAT_FILE: Final = "empty_heartbeat_file"
SESSION_BUSY: Final = "session_busy"
BUDGET: Final = "budget"  # the background budget of the day is spent (budget.background)


def checklist_skip(text: str | None) -> str | None:
    """The skip reason HEARTBEAT.md gives (None: it holds a task). Headings, comments,
    rules, blank lines and empty bullets are no task, so the shipped template is empty."""
    if text is None:
        return NO_HEARTBEAT_FILE
    if heartbeat_file_is_empty(text):
        return EMPTY_HEARTBEAT_FILE
    return None
