"""`/model`: a picker of the models the session's provider offers (`models.list`, asked
through the gateway, which holds the keys). Dismisses with the model id chosen, or None.
A provider that cannot list its models is said in its own words, with the way out."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input
from textual.widgets import Static

from gsv_cli import output
from gsv_cli.safe_text import plain_content
from gsv_cli.tui.model_calls import list_models
from gsv_cli.tui.widgets.model_list import ModelList
from gsv_core.client import GatewayClient
from gsv_core.errors import GsvError


class ModelPicker(ModalScreen[str | None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "Close")]

    def __init__(self, client: GatewayClient, provider: str, current: str) -> None:
        super().__init__()
        self.client = client
        self.provider = provider
        self.current = current  # the model id the next message would use

    def compose(self) -> ComposeResult:
        with Vertical(id="model-picker", classes="dialog"):
            title = f"Models of {self.provider} — Enter switches · Esc closes"
            yield Static(plain_content(title), classes="dialog-title")
            yield ModelList()
            yield Static(plain_content("asking the provider…"), id="picker-status")

    def on_mount(self) -> None:
        self.query_one(ModelList).query_one(Input).focus()
        self.load()

    @property
    def status_line(self) -> Static:
        return self.query_one("#picker-status", Static)

    @work(exclusive=True, group="models", exit_on_error=False)
    async def load(self) -> None:
        try:
            models = await list_models(self.client, self.provider)
        except GsvError as exc:
            self.status_line.update(
                plain_content(f"{exc.message}\n/setup sets up a provider here.")
            )
            self.status_line.add_class("-error")
            return
        self.query_one(ModelList).set_models(models, self.current, self.current)
        if models:
            self.status_line.update(
                plain_content(f"{output.count(len(models), 'model')} · ● in use now")
            )
        else:
            self.status_line.update(plain_content(f"{self.provider} offers no models."))

    @on(ModelList.Chosen)
    def _chosen(self, event: ModelList.Chosen) -> None:
        self.dismiss(event.model)
