"""The chat app's model actions: `/model` opens the picker of the provider's models and
switches the session to the one chosen; `/setup` (F2) opens the setup screen, and a model
set up there becomes the configured model and this session's. The status bar is loaded
again after each, so it names the model the next message will use."""

from __future__ import annotations

from gsv_cli.tui import model_calls
from gsv_cli.tui import session_info
from gsv_cli.tui.screens.model_picker import ModelPicker
from gsv_cli.tui.screens.setup import SetupScreen
from gsv_cli.tui.sending import Outbox
from gsv_core.errors import GsvError


class ModelActions(Outbox):
    """Picking and setting up models for `ChatApp`."""

    def action_models(self) -> None:
        provider, _, current = self.status.model.partition("/")

        def picked(model: str | None) -> None:
            if model and model != current:
                self.run_worker(self.switch_model(provider, model), exit_on_error=False)

        self.push_screen(ModelPicker(self.client, provider, current), picked)

    def action_setup(self) -> None:
        def saved(model: str | None) -> None:
            if model:
                self.run_worker(self._set_up(model), exit_on_error=False)

        if not isinstance(self.screen, SetupScreen):
            self.push_screen(SetupScreen(self.client), saved)

    async def switch_model(self, provider: str, model: str) -> bool:
        """This session's next messages go to `provider`/`model`; False (said) if refused."""
        try:
            await model_calls.switch_model(self.client, self.session_key, provider, model)
        except GsvError as exc:
            await self.chat.add_notice(f"Cannot switch the model: {exc.message}", "error")
            return False
        self.refresh_status()
        await self.chat.add_notice(f"Model set to {provider}/{model}.", "dim")
        return True

    async def _set_up(self, chosen: str) -> None:
        """Saved as the configured model; this session may have its own: switch it too."""
        if self._setup_hint is not None:
            await self._setup_hint.remove()
            self._setup_hint = None
        try:
            now = (await session_info.fetch_status(self.client, self.session_key)).model
        except GsvError as exc:
            await self.chat.add_notice(f"Cannot load the session: {exc.message}", "error")
            return
        if now != chosen:
            provider, _, model = chosen.partition("/")
            if not await self.switch_model(provider, model):
                return
        self.refresh_status()  # the gateway tells the other clients, not this one
        await self.chat.add_notice(f"{chosen} is set up and answers. Send your message.", "dim")
