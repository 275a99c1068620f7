"""Where you write: a multi-line text area (Enter sends, Shift+Enter or Ctrl+J starts a new
line), Up/Down through what you sent before, and a menu completing slash commands with
their help while a `/word` is typed.
"""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.binding import BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets import TextArea
from textual.widgets.option_list import Option

from gsv_cli.tui.commands import SlashCommand
from gsv_cli.tui.commands import completions

NEWLINE_KEYS = frozenset({"shift+enter", "ctrl+j", "alt+enter"})


class CommandMenu(OptionList):
    """The slash-command completions for what is typed; never takes the focus."""

    can_focus = False

    def __init__(self) -> None:
        super().__init__(id="command-menu")
        self.matches: list[tuple[str, SlashCommand]] = []
        self.display = False

    def show_for(self, text: str) -> None:
        self.matches = completions(text)
        self.clear_options()
        for spelling, command in self.matches:
            usage = f" {command.usage}" if command.usage else ""
            self.add_option(Option(Content(f"/{spelling}{usage}  — {command.help}")))
        self.display = bool(self.matches)
        if self.matches:
            self.highlighted = 0

    def hide(self) -> None:
        self.display = False
        self.matches = []

    def move(self, step: int) -> None:
        if self.matches:
            current = self.highlighted or 0
            self.highlighted = (current + step) % len(self.matches)

    def chosen(self) -> tuple[str, SlashCommand] | None:
        if not self.display or not self.matches:
            return None
        return self.matches[self.highlighted or 0]


class Composer(TextArea):
    """The text area. Posts `Composer.Submitted` with the text when Enter is pressed."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("tab", "complete", "Complete", show=False)]

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, menu: CommandMenu) -> None:
        super().__init__(
            id="composer",
            soft_wrap=True,
            tab_behavior="focus",
            compact=True,
            highlight_cursor_line=False,
            placeholder="Message the agent — Enter sends, Shift+Enter new line, / commands",
        )
        self.menu = menu
        self.sent: list[str] = []
        self._recall: int | None = None  # index into history while browsing it
        self._draft = ""

    def on_mount(self) -> None:
        if self.app.is_headless:
            self.cursor_blink = False  # tests and snapshots see a steady cursor

    async def _on_key(self, event: events.Key) -> None:
        if event.key in NEWLINE_KEYS:
            event.stop()
            event.prevent_default()
            self.insert("\n")
            return
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            if not self._complete(sending=True):
                self._submit()
            return
        if event.key == "escape" and self.menu.display:
            event.stop()
            event.prevent_default()
            self.menu.hide()
            return
        await super()._on_key(event)

    def _submit(self) -> None:
        text = self.text
        if not text.strip():
            return
        if not self.sent or self.sent[-1] != text:
            self.sent.append(text)
        self._recall = None
        self.clear()
        self.menu.hide()
        self.post_message(self.Submitted(text))

    def action_complete(self) -> None:
        if not self._complete(sending=False):
            self.app.action_focus_next()

    def _complete(self, *, sending: bool) -> bool:
        """Put the highlighted command in the composer; False when there is nothing to
        complete (or, when sending, the text already is that command)."""
        chosen = self.menu.chosen()
        if chosen is None:
            return False
        spelling, command = chosen
        if sending and self.text.strip() == f"/{spelling}":
            return False
        completed = f"/{spelling}" + (" " if command.usage else "")
        self.load_text(completed)
        self.move_cursor(self.document.end)
        self.menu.hide()
        return True

    @on(TextArea.Changed)
    def _changed(self) -> None:
        if self._recall is not None:
            self.menu.hide()  # a message from the history, not a command being typed
        else:
            self.menu.show_for(self.text)

    # -- history ------------------------------------------------------------------------
    def action_cursor_up(self, select: bool = False) -> None:
        if self.menu.display and not select:
            self.menu.move(-1)
        elif not select and self.cursor_at_first_line and self.sent:
            self._browse(-1)
        else:
            super().action_cursor_up(select)

    def action_cursor_down(self, select: bool = False) -> None:
        if self.menu.display and not select:
            self.menu.move(1)
        elif not select and self.cursor_at_last_line and self._recall is not None:
            self._browse(1)
        else:
            super().action_cursor_down(select)

    def _browse(self, step: int) -> None:
        if self._recall is None:
            self._draft = self.text
            index = len(self.sent)
        else:
            index = self._recall
        index = max(0, min(len(self.sent), index + step))
        self._recall = None if index == len(self.sent) else index
        self.load_text(self._draft if self._recall is None else self.sent[index])
        self.move_cursor(self.document.end)
        self.menu.hide()


class ComposerArea(Vertical):
    """The completion menu above the composer."""

    def compose(self) -> ComposeResult:
        menu = CommandMenu()
        yield menu
        yield Composer(menu)
