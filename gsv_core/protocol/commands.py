"""The slash-command vocabulary as users type it: names, other spellings,
arguments and one-line help. The gateway's parser (`gsv_core.agent.commands`) and the chat
TUI's completion both read this list, so the two can never disagree about a spelling.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_COMPACT_KEEP = 20


@dataclass(frozen=True)
class CommandInfo:
    """One command for help and completion: its name, other spellings, arguments, purpose."""

    name: str
    aliases: tuple[str, ...]
    usage: str
    help: str

    @property
    def spellings(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


COMMANDS: tuple[CommandInfo, ...] = (
    CommandInfo("reset", ("new",), "", "Start a new session (the old one is archived)"),
    CommandInfo("compact", (), "[N]", f"Keep the last N messages (default {DEFAULT_COMPACT_KEEP})"),
    CommandInfo("stop", (), "", "Stop the current run"),
    CommandInfo("status", (), "", "Show session info"),
    CommandInfo("usage", (), "", "Show today's tokens and spend (this session and all)"),
    CommandInfo("budget", (), "[daily|monthly|background USD|off]", "Show or set a budget"),
    CommandInfo("model", (), "[provider/model-id|model-id]", "Show or set the model"),
    CommandInfo(
        "think",
        ("thinking", "t"),
        "[level]",
        "Show or set the reasoning level (off, minimal, low, medium, high, xhigh)",
    ),
    CommandInfo("help", (), "", "Show this help"),
)
