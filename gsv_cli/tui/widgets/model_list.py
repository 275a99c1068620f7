"""A provider's models to choose from, for the `/model` picker and the setup screen: a
filter line above the list (OpenRouter offers hundreds), Enter in either chooses.

Model names come from the provider: they are shown as plain text, never as markup."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.binding import BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from gsv_cli.safe_text import plain_content


class ModelList(Vertical):
    # from the filter line, Up and Down move in the list
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("down", "move(1)", show=False),
        Binding("up", "move(-1)", show=False),
    ]

    class Chosen(Message):
        """A model was chosen (Enter on the list, or on the filter line)."""

        def __init__(self, model: str) -> None:
            super().__init__()
            self.model = model

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="model-list")
        self.models: list[str] = []
        self.marked: str | None = None  # the model in use, marked with ●

    def compose(self) -> ComposeResult:
        yield Input(placeholder="type to filter", classes="model-filter")
        yield OptionList(classes="model-options")

    @property
    def options(self) -> OptionList:
        return self.query_one(OptionList)

    def set_models(self, models: list[str], highlight: str | None, marked: str | None) -> None:
        """Show `models`, `highlight`ed first (the default offered), `marked` as in use."""
        self.models, self.marked = list(models), marked
        self.query_one(Input).value = ""
        self._show(self.models, highlight)

    def _show(self, models: list[str], highlight: str | None) -> None:
        options = self.options
        options.clear_options()
        for model in models:
            line = f"{'●' if model == self.marked else ' '} {model}"
            options.add_option(Option(plain_content(line), id=model))
        if models:
            options.highlighted = models.index(highlight) if highlight in models else 0

    @property
    def highlighted(self) -> str | None:
        options = self.options
        if options.highlighted is None or options.option_count == 0:
            return None
        return options.get_option_at_index(options.highlighted).id

    def action_move(self, step: int) -> None:
        if step > 0:
            self.options.action_cursor_down()
        else:
            self.options.action_cursor_up()

    @on(Input.Changed)
    def _filter(self, event: Input.Changed) -> None:
        event.stop()
        wanted = event.value.strip().lower()
        self._show([m for m in self.models if wanted in m.lower()], self.highlighted)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.highlighted is not None:
            self.post_message(self.Chosen(self.highlighted))

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.post_message(self.Chosen(event.option.id))
