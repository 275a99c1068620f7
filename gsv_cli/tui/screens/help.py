"""F1 / `?`: the keys and the slash commands, in a dialog."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from gsv_cli.tui.commands import GATEWAY_COMMANDS
from gsv_cli.tui.commands import LOCAL_COMMANDS
from gsv_cli.tui.commands import SlashCommand

KEYS = (
    ("Enter", "send the message"),
    ("Shift+Enter, Ctrl+J", "new line"),
    ("Up / Down", "your previous / next message (first / last line)"),
    ("Tab", "complete a slash command"),
    ("Esc", "stop the current run"),
    ("Ctrl+S", "sessions: switch, new, rename"),
    ("Ctrl+L", "reload the session from the gateway"),
    ("F2", "set up a model: provider, key, model, test call"),
    ("F1, ?", "this help"),
    ("Ctrl+C twice, Ctrl+Q", "quit"),
)
COLUMN = 22


def _rows(rows: list[tuple[str, str]]) -> list[str]:
    return [f"  {left:<{COLUMN}} {right}" for left, right in rows]


def _commands(group: tuple[SlashCommand, ...]) -> list[tuple[str, str]]:
    return [(command.line(), command.help) for command in group]


def help_text() -> str:
    lines = ["Keys", *_rows(list(KEYS)), "", "Commands answered by the gateway"]
    lines += _rows(_commands(GATEWAY_COMMANDS))
    lines += ["", "Commands of this chat", *_rows(_commands(LOCAL_COMMANDS)), ""]
    lines += [
        "/model alone opens a picker of the provider's models.",
        "Inline directives change one message: /think:high ..., /model:provider/id ...",
        "Esc closes this help.",
    ]
    return "\n".join(lines)


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,f1,q,question_mark", "dismiss", "Close")
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-dialog"):
            yield Static(Content(help_text()), id="help-text")
