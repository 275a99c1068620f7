"""The slash commands the chat TUI completes and explains: the gateway's slash
commands (sent to the gateway as they are) and the few the TUI answers itself.

The gateway's commands come from `gsv_core.protocol.commands`, the one list the gateway's
parser also reads; the TUI adds only the commands it answers itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from gsv_core.protocol.commands import COMMANDS as GATEWAY_COMMAND_INFO


@dataclass(frozen=True)
class SlashCommand:
    """One command for completion and help; `local` ones never reach the gateway."""

    name: str
    usage: str
    help: str
    aliases: tuple[str, ...] = ()
    local: bool = False

    @property
    def spellings(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    def line(self) -> str:
        """`/name usage` as typed."""
        return f"/{self.name} {self.usage}".rstrip()


GATEWAY_COMMANDS: tuple[SlashCommand, ...] = tuple(
    SlashCommand(info.name, info.usage, info.help, info.aliases) for info in GATEWAY_COMMAND_INFO
)

LOCAL_COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("sessions", "", "Pick, create or rename sessions (also Ctrl+S)", local=True),
    SlashCommand("switch", "KEY", "Switch to the session KEY", local=True),
    SlashCommand("rename", "LABEL", "Label this session", local=True),
    SlashCommand(
        "search", "QUERY", "Search past conversations and notes; Enter opens a session", local=True
    ),
    SlashCommand(
        "setup", "", "Set up a model here: provider, key, model, test (also F2)", local=True
    ),
    SlashCommand("quit", "", "Leave the chat (also Ctrl+Q)", ("exit",), local=True),
)

COMMANDS: tuple[SlashCommand, ...] = GATEWAY_COMMANDS + LOCAL_COMMANDS

# the gateway answers these by changing the session: the TUI reloads it afterwards
RELOADING = frozenset({"reset", "compact"})
# ... or its settings: the status bar is refreshed
SETTINGS_CHANGING = frozenset({"model", "think"})


def completions(text: str) -> list[tuple[str, SlashCommand]]:
    """Commands whose name or alias starts with what is typed (`/th` -> think, thinking),
    as (spelling, command); nothing once the text is more than one `/word`."""
    if not text.startswith("/") or any(c.isspace() for c in text):
        return []
    prefix = text[1:].lower()
    found: list[tuple[str, SlashCommand]] = []
    for command in COMMANDS:
        for spelling in command.spellings:
            if spelling.startswith(prefix):
                found.append((spelling, command))
                break
    return found


@dataclass(frozen=True)
class LocalCommand:
    name: str
    args: str


def parse_local(text: str) -> LocalCommand | None:
    """A command the TUI answers itself (`/switch KEY`), or None (anything else is sent)."""
    stripped = text.strip()
    if not stripped.startswith("/") or "\n" in stripped:
        return None
    word, _, args = stripped[1:].partition(" ")
    for command in LOCAL_COMMANDS:
        if word.lower() in command.spellings:
            return LocalCommand(command.name, args.strip())
    return None


def is_command_like(text: str) -> bool:
    """A one-line `/word ...` message: the gateway may answer it as a command."""
    stripped = text.strip()
    return stripped.startswith("/") and "\n" not in stripped


def opens_model_picker(text: str) -> bool:
    """`/model` alone opens the TUI's picker; with an argument it goes to the gateway."""
    return text.strip().lower() == "/model"
