"""The chat app's sending: your messages go out one at a time, in order (a command's
answer is shown, a message's run is followed), and approval answers."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from textual import work

from gsv_cli.tui import commands
from gsv_cli.tui.link import GatewayLink
from gsv_cli.tui.widgets.approval import ApprovalPrompt
from gsv_core.errors import GsvError
from gsv_core.protocol.methods import CHAT_SEND
from gsv_core.protocol.methods import TOOL_APPROVE

log = logging.getLogger(__name__)

SEND_TIMEOUT = 120.0


class Outbox(GatewayLink):
    """Sending messages and approval answers for `ChatApp` (a command's answer may need
    the session loaded again, hence the link underneath)."""

    @work(group="outbox", exclusive=True, exit_on_error=False)
    async def send_outbox(self) -> None:
        while True:
            text = await self._outbox.get()
            try:
                await self.send_message(text)
            except Exception:  # never lose the sender: the next message must still go
                log.exception("sending failed")

    async def send_message(self, text: str) -> None:
        """Send one message; a command's answer is shown, a message's run is followed."""
        run_id = str(uuid.uuid4())
        key = self.session_key
        command_like = commands.is_command_like(text)
        message = None
        if not command_like:
            async with self._lock:
                message = await self.chat.add_user(text)
                self.chat.expect(run_id)
                self._update_activity()
        params = {"sessionKey": key, "message": text, "runId": run_id}
        try:
            result = await self.client.call(CHAT_SEND, params, timeout=SEND_TIMEOUT)
        except GsvError as exc:
            async with self._lock:
                self.chat.runs.pop(run_id, None)
                if message is not None:
                    message.mark_failed(exc.message)
                else:
                    await self.chat.add_notice(f"{text}: not sent: {exc.message}", "error")
                self._update_activity()
            return
        if result.get("status") != "started" and not result.get("queued"):
            await self._command_answered(text, run_id, result)
            return
        async with self._lock:
            if message is None:  # `/word` that is no command: the model gets it as text
                message = await self.chat.add_user(text)
                self.chat.expect(run_id)
            if result.get("status") == "paused":  # queued while an approval waits
                await self.chat.add_notice(str(result.get("response", "")), "dim")
            if result.get("queued"):
                self.chat.mark_queued(run_id, message, int(result.get("queuePosition") or 1))
            self._update_activity()

    async def _command_answered(self, text: str, run_id: str, result: dict[str, Any]) -> None:
        """A command or directive-only message: echo it and show the answer. After /new or
        /compact the session is loaded again first (so the answer stays on screen)."""
        command = result.get("command")
        if command in commands.RELOADING:
            await self.sync()
        elif command in commands.SETTINGS_CHANGING or result.get("status") == "directive-only":
            self.refresh_status()  # e.g. `/model:p/id` alone sets the next message's model
        async with self._lock:
            self.chat.runs.pop(run_id, None)
            await self.chat.add_notice(f"› {text.strip()}", "dim")
            response, error = result.get("response"), result.get("error")
            if error:
                await self.chat.add_notice(str(error), "error")
            elif response and not quiet(result):
                await self.chat.add_notice(hard_breaks(str(response)), markdown=True)
            self._update_activity()

    async def answer_approval(
        self, prompt: ApprovalPrompt, decision: str, remember: str | None
    ) -> None:
        """Send `tool.approve`; the gateway's `tool.approval` event settles the prompt."""
        params: dict[str, Any] = {"approvalId": prompt.approval_id, "decision": decision}
        if remember:
            params["remember"] = remember
        try:
            await self.client.call(TOOL_APPROVE, params)
        except GsvError as exc:
            await self.chat.add_notice(f"Cannot answer the approval: {exc.message}", "error")


def quiet(result: dict[str, Any]) -> bool:
    """/stop's "Stopped run ..." is followed by the run's own `error` event: say it once."""
    return result.get("command") == "stop" and str(result.get("response", "")).startswith(
        "Stopped run"
    )


def hard_breaks(text: str) -> str:
    """Gateway answers are line-oriented: keep their line breaks in Markdown."""
    return "\n".join(line + "  " if line.strip() else line for line in text.splitlines())
