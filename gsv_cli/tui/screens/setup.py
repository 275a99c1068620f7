"""`/setup` (offered when no model is usable): `gsv onboard` inside the chat. Pick a
provider (a local Ollama is found when 127.0.0.1:11434 answers), give its key in a
password field (or an OpenAI-compatible URL), pick one of the models it lists, see one
tiny live test call answer, save. Dismisses with "provider/model" once saved, or None.

The key goes straight to the gateway's secret store (`config.set`); the field is cleared
as soon as it is sent and nothing shows or logs it. Whatever the provider says (model
names, errors) is shown as plain text."""

from __future__ import annotations

import asyncio
from typing import Any
from typing import ClassVar

from textual import on
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Button
from textual.widgets import Input
from textual.widgets import OptionList
from textual.widgets import Static
from textual.widgets.option_list import Option

from gsv_cli import output
from gsv_cli.provider_setup import KEYED
from gsv_cli.provider_setup import OLLAMA_URL
from gsv_cli.provider_setup import default_model
from gsv_cli.provider_setup import ollama_running
from gsv_cli.safe_text import plain_content
from gsv_cli.tui import model_calls
from gsv_cli.tui.widgets.model_list import ModelList
from gsv_core.client import GatewayClient
from gsv_core.errors import GsvError

CUSTOM = "custom"  # the provider name an OpenAI-compatible URL is configured under
PROVIDERS = (
    ("anthropic", "Anthropic"),
    ("openai", "OpenAI"),
    ("openrouter", "OpenRouter"),
    ("google", "Gemini"),
    ("ollama", "Ollama on this machine (no key)"),
    (CUSTOM, "Any OpenAI-compatible URL"),
)
PROMPTS = {
    "provider": "Pick a provider (Enter).",
    "key": "Paste the API key (hidden) and press Enter.",
    "url": "The OpenAI-compatible base URL (…/v1) and, if it needs one, its key; Enter.",
    "model": "Pick a model (Enter makes one tiny test call).",
}


class SetupScreen(ModalScreen[str | None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "back", "Back")]

    def __init__(self, client: GatewayClient) -> None:
        super().__init__()
        self.client = client
        self.step = "provider"
        self.provider: str | None = None
        self.tested: str | None = None  # the model whose test call answered
        # the provider's config writes, tried unsaved; saved with the model on Save
        self.trial: dict[str, Any] = {}

    def compose(self) -> ComposeResult:
        with Vertical(id="setup", classes="dialog"):
            yield Static("Set up a model — Esc goes back", classes="dialog-title")
            yield Static(id="setup-prompt")
            yield OptionList(*self._provider_options(False), id="setup-providers")
            yield Input(placeholder="http://127.0.0.1:8000/v1", id="setup-url")
            yield Input(placeholder="API key (hidden)", password=True, id="setup-key")
            yield ModelList(id="setup-models")
            yield Static(id="setup-status")
            yield Button("Save and use it", id="setup-save", variant="success")

    def _provider_options(self, ollama_found: bool) -> list[Option]:
        found = " · found running" if ollama_found else f" · not found at {OLLAMA_URL}"
        return [
            Option(label + (found if name == "ollama" else ""), id=name)
            for name, label in PROVIDERS
        ]

    def on_mount(self) -> None:
        self._show_step("provider")
        self.find_ollama()

    @work(group="ollama", exit_on_error=False)
    async def find_ollama(self) -> None:
        if not await asyncio.to_thread(ollama_running):
            return
        providers = self.query_one("#setup-providers", OptionList)
        providers.clear_options()
        providers.add_options(self._provider_options(True))
        providers.highlighted = [name for name, _ in PROVIDERS].index("ollama")

    # -- steps ----------------------------------------------------------------------------
    def _show_step(self, step: str) -> None:
        """Show the widgets of `step` (`url` shows the key field too) and focus the first."""
        self.step = step
        self.query_one("#setup-prompt", Static).update(PROMPTS[step])
        shown = {
            "provider": ["#setup-providers"],
            "key": ["#setup-key"],
            "url": ["#setup-url", "#setup-key"],
            "model": ["#setup-models"],
        }[step]
        for selector in ("#setup-providers", "#setup-url", "#setup-key", "#setup-models"):
            self.query_one(selector).display = selector in shown
        self.query_one("#setup-save").display = False
        first = self.query_one(shown[0])
        (first.query_one(Input) if isinstance(first, ModelList) else first).focus()

    def say(self, text: str, kind: str = "") -> None:
        """One status line: progress, the test's answer, or an error with its fix."""
        status = self.query_one("#setup-status", Static)
        status.update(plain_content(text))
        status.set_classes(f"-{kind}" if kind else "")

    def action_back(self) -> None:
        if self.step == "provider":
            self.dismiss(None)
        elif self.step == "model" and self.provider in (*KEYED, CUSTOM):
            self._show_step("url" if self.provider == CUSTOM else "key")
        else:
            self._show_step("provider")

    @on(OptionList.OptionSelected, "#setup-providers")
    def _provider_chosen(self, event: OptionList.OptionSelected) -> None:
        self.provider = event.option.id
        self.say("")
        if self.provider == CUSTOM:
            self._show_step("url")
        elif self.provider in KEYED:
            self._show_step("key")
        else:
            self.connect(None, None)

    @on(Input.Submitted, "#setup-url")
    def _url_given(self) -> None:
        self.query_one("#setup-key").focus()

    @on(Input.Submitted, "#setup-key")
    def _key_given(self) -> None:
        field = self.query_one("#setup-key", Input)
        key, field.value = field.value.strip() or None, ""  # the field never keeps it
        if self.provider in KEYED and key is None:
            self.say(f"{self.provider} needs an API key.", "error")
            return
        url = self.query_one("#setup-url", Input).value if self.provider == CUSTOM else None
        self.connect(url, key)

    # -- the gateway calls ----------------------------------------------------------------
    @work(group="setup", exclusive=True, exit_on_error=False)
    async def connect(self, url: str | None, key: str | None) -> None:
        """Configure the provider (key included), then ask it for its models."""
        name = str(self.provider)
        self.say(f"asking {name} for its models…")
        try:
            self.trial = model_calls.provider_writes(name, url, key)
            models = await model_calls.list_models(self.client, name, self.trial)
        except GsvError as exc:
            self.say(f"{exc.message}\n{self._retry_hint()}", "error")
            return
        if not models:
            self.say(f"{name} offers no models yet (for Ollama: ollama pull llama3.1).", "error")
            return
        self._show_step("model")
        self.query_one(ModelList).set_models(models, default_model(models), None)
        self.say(f"{output.count(len(models), 'model')} offered.")

    def _retry_hint(self) -> str:
        if self.step == "provider":  # Ollama: nothing was typed, nothing to fix here
            return "Start it (ollama serve) and press Enter again, or pick another provider."
        return "Fix it and press Enter again (Esc: another provider)."

    @on(ModelList.Chosen)
    def _model_chosen(self, event: ModelList.Chosen) -> None:
        self.try_model(event.model)

    @work(group="setup", exclusive=True, exit_on_error=False)
    async def try_model(self, model: str) -> None:
        name = str(self.provider)
        self.tested = None
        self.query_one("#setup-save").display = False
        self.say(f"testing {name}/{model}…")
        try:
            answer = await model_calls.try_model(self.client, name, model, self.trial)
        except GsvError as exc:
            self.say(f"The test call failed: {exc.message}\nPick another model.", "error")
            return
        self.tested = model
        self.say(
            f"✓ {name}/{model} answered in {answer.ms} ms: {answer.reply[:200]}\n"
            "Enter: save and use it (Shift+Tab: back to the list)",
            "ok",
        )
        save = self.query_one("#setup-save", Button)
        save.display = True
        save.focus()

    @on(Button.Pressed, "#setup-save")
    def _save_pressed(self) -> None:
        if self.tested is not None:
            self.save(str(self.provider), self.tested)

    @work(group="setup", exclusive=True, exit_on_error=False)
    async def save(self, name: str, model: str) -> None:
        try:
            await model_calls.save_model(self.client, name, model, self.trial)
        except GsvError as exc:
            self.say(f"Cannot save the model: {exc.message}", "error")
            return
        self.dismiss(f"{name}/{model}")
