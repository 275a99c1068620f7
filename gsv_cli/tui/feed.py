"""The chat app's feed of gateway events: the session's runs (deltas, partials, finals,
errors, pauses), tool calls, notices and approvals, shown in order."""

from __future__ import annotations

import logging
from typing import Any

from textual import work

from gsv_cli.tui import model_setup
from gsv_cli.tui.chat_base import ChatBase
from gsv_core.protocol import events
from gsv_core.protocol.frames import EventFrame

log = logging.getLogger(__name__)

CANCELLED = "Run cancelled by user"


class EventFeed(ChatBase):
    """Showing the gateway's events for `ChatApp`."""

    @work(group="events", exclusive=True, exit_on_error=False)
    async def pump_events(self) -> None:
        async for frame in self.client.events():
            try:
                await self.on_gateway_event(frame)
            except Exception:  # one bad event must not end the chat
                log.exception("could not show event %s", frame.event)

    async def on_gateway_event(self, frame: EventFrame) -> None:
        payload = frame.payload if isinstance(frame.payload, dict) else {}
        if frame.event == events.CONFIG_CHANGED:
            self.refresh_status()  # the configured model may be the one the header shows
            return
        if payload.get("sessionKey") != self.session_key:
            return  # another session's run
        async with self._lock:
            if frame.event == events.CHAT:
                await self._on_chat(payload)
            elif frame.event == events.CHAT_TOOL:
                run_id = payload.get("runId")  # None: a `tool.request` call, not a run
                tool = payload.get("tool") or {}
                await self.chat.on_tool(None if run_id is None else str(run_id), tool)
            elif frame.event == events.SESSION_NOTICE and payload.get("kind") == "heartbeat":
                # an alert from the agent's heartbeat: its words, worth reading
                text = str(payload.get("text", ""))
                await self.chat.add_notice(f"**Heartbeat**\n\n{text}", markdown=True)
            elif frame.event == events.SESSION_NOTICE:
                await self.chat.add_notice(str(payload.get("text", "")), "dim")
            elif frame.event == events.TOOL_APPROVAL:
                await self.chat.on_approval(payload)
            self._update_activity()

    async def _on_chat(self, payload: dict[str, Any]) -> None:
        run_id, state = str(payload.get("runId")), payload.get("state")
        if state == events.CHAT_DELTA:
            replace = payload.get("replace") is True
            await self.chat.on_delta(run_id, str(payload.get("text", "")), replace)
        elif state == events.CHAT_PARTIAL:
            await self.chat.on_partial(run_id, payload.get("message") or {})
        elif state == events.CHAT_FINAL:
            self._remote_busy = False
            await self.chat.on_final(run_id, payload.get("message"))
            if self._setup_hint is not None:  # the model answered: the hint was wrong
                await self._setup_hint.remove()
                self._setup_hint = None
            self.status.tokens_in += int((payload.get("usage") or {}).get("input") or 0)
            self.status.tokens_out += int((payload.get("usage") or {}).get("output") or 0)
            self.show_status_bar()
            self.refresh_status()  # the message used up a model set for it alone
        elif state == events.CHAT_ERROR:
            self._remote_busy = False
            await self.chat.on_error(run_id, str(payload.get("error", "")))
            await self._show_run_error(str(payload.get("error") or "the run failed"))
            self.refresh_status()
        elif state == events.CHAT_PAUSED and payload.get("approvalId") not in self.chat.approvals:
            # an approval shows as its prompt; any other pause as the gateway's text
            await self.chat.add_notice(text_of(payload.get("message")) or "The run is paused.")

    async def _show_run_error(self, error: str) -> None:
        if error == CANCELLED:
            await self.chat.add_notice("Run stopped.", "dim")
        elif model_setup.is_setup_error(error):
            await self.chat.add_notice(model_setup.setup_text(error=error), "setup")
        else:
            await self.chat.add_notice(error, "error")


def text_of(message: Any) -> str:
    """The text of a paused event's message (an assistant message or a plain string)."""
    if isinstance(message, str):
        return message
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    blocks = content if isinstance(content, list) else []
    return "".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict))
