"""The conversation: a scrolling column of messages that follows the bottom as replies
stream in, and the bookkeeping of runs (which reply is streaming, which tool block is a
call's, which of your messages are still queued).

The app feeds it the events of its session, in order; the view never talks to the
gateway. A run's events: `delta` text (streamed into the run's current reply), `partial`
(the reply before its tool calls; settles the text), `chat.tool` start/end, then `final`
or `error`.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from typing import Any

from textual import on
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Markdown

from gsv_cli.safe_text import neutralise
from gsv_cli.tui.transcript import AssistantItem
from gsv_cli.tui.transcript import Item
from gsv_cli.tui.transcript import NoticeItem
from gsv_cli.tui.transcript import ToolItem
from gsv_cli.tui.transcript import ToolView
from gsv_cli.tui.transcript import UserItem
from gsv_cli.tui.widgets.approval import ApprovalPrompt
from gsv_cli.tui.widgets.messages import AssistantMessage
from gsv_cli.tui.widgets.messages import MarkdownNotice
from gsv_cli.tui.widgets.messages import Notice
from gsv_cli.tui.widgets.messages import ToolBlock
from gsv_cli.tui.widgets.messages import UserMessage

WEB_LINKS = ("https://", "http://")


@dataclass
class RunView:
    """What the view knows of one run of its session."""

    run_id: str
    reply: AssistantMessage | None = None  # the reply being streamed, if any
    seen: bool = False  # an event of it arrived (so it is running, not queued)
    tools: dict[str, ToolBlock] = field(default_factory=dict)


class ChatView(VerticalScroll):
    """The message column; `runs` holds the runs that have not ended yet."""

    can_focus = True

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.runs: dict[str, RunView] = {}
        self.queued: dict[str, UserMessage] = {}
        self.stored: dict[int, Widget] = {}  # a loaded message's widget by its timestamp
        # runs that already ended: a late chat.send answer must not revive them
        self.ended: set[str] = set()
        self.approvals: dict[str, ApprovalPrompt] = {}
        # calls made with `tool.request` (events with no run): shown, but no run is busy
        self.lone_tools: dict[str, ToolBlock] = {}
        self.shown_link: str | None = None  # the link whose target was shown last

    def on_mount(self) -> None:
        self.anchor()  # stay at the bottom while content grows, until the user scrolls up

    @property
    def busy(self) -> bool:
        return bool(self.runs)

    @on(Markdown.LinkClicked)
    def _link_clicked(self, event: Markdown.LinkClicked) -> None:
        """A reply's link text may hide where it goes: the first click shows the target,
        a second click on the same link opens it (web links only)."""
        event.stop()
        if event.href == self.shown_link and event.href.startswith(WEB_LINKS):
            self.shown_link = None
            self.app.open_url(event.href)
            return
        self.shown_link = event.href
        again = "\nClick it again to open it." if event.href.startswith(WEB_LINKS) else ""
        self.notify(neutralise(event.href) + again, title="Link", markup=False)

    # -- building blocks ----------------------------------------------------------------
    async def add(self, widget: Widget) -> Widget:
        await self.mount(widget)
        return widget

    async def add_user(self, text: str) -> UserMessage:
        message = UserMessage(text)
        await self.mount(message)
        return message

    async def add_notice(
        self, text: str, kind: str = "info", *, markdown: bool = False, at_top: bool = False
    ) -> Widget:
        widget: Widget = MarkdownNotice(text, kind) if markdown else Notice(text, kind)
        if at_top and self.children:
            await self.mount(widget, before=0)
        else:
            await self.mount(widget)
        return widget

    async def clear(self) -> None:
        await self.remove_children()
        self.stored.clear()
        self.runs.clear()
        self.queued.clear()
        self.ended.clear()
        self.approvals.clear()

    async def load_history(self, items: list[Item]) -> None:
        """Replace everything with a session's stored conversation."""
        await self.clear()
        widgets: list[Widget] = []
        for item in items:
            if isinstance(item, UserItem | AssistantItem):
                widget: Widget = (
                    UserMessage(item.text)
                    if isinstance(item, UserItem)
                    else AssistantMessage(item.text)
                )
                widgets.append(widget)
                if item.at is not None:
                    self.stored.setdefault(item.at, widget)
            elif isinstance(item, ToolItem):
                widgets.append(ToolBlock(item.view))
            elif isinstance(item, NoticeItem):
                widgets.append(Notice(item.text, item.kind))
        if widgets:
            await self.mount_all(widgets)
        self.scroll_end(animate=False)

    def reveal(self, at: int) -> bool:
        """Scroll to the loaded message stored at `at` (epoch ms) and mark it; False when
        it is not shown (archived, compacted, or older than the history loaded)."""
        widget = self.stored.get(at)
        if widget is None:
            return False
        for marked in self.query(".found"):
            marked.remove_class("found")
        widget.add_class("found")
        # after the next refresh: a history just mounted has no layout to scroll by yet
        self.call_after_refresh(self.scroll_to_center, widget, animate=False)
        return True

    # -- your messages ------------------------------------------------------------------
    def expect(self, run_id: str) -> None:
        """A message of ours was accepted for run `run_id` and starts now."""
        if run_id not in self.ended:
            self.runs.setdefault(run_id, RunView(run_id))

    def mark_queued(self, run_id: str, message: UserMessage, position: int) -> None:
        if run_id in self.ended or (run_id in self.runs and self.runs[run_id].seen):
            return  # its events came first: it is already running (or done)
        self.runs.pop(run_id, None)
        self.queued[run_id] = message
        message.mark_queued(position)

    def _started(self, run_id: str) -> RunView:
        message = self.queued.pop(run_id, None)
        if message is not None:
            message.mark_started()
        run = self.runs.setdefault(run_id, RunView(run_id))
        run.seen = True
        return run

    def _advance_queue(self) -> None:
        """A run ended: every queued message moves up; the first one's run starts."""
        for run_id, message in list(self.queued.items()):
            position = (message.queue_position or 1) - 1
            if position <= 0:
                self.queued.pop(run_id).mark_started()
                self.expect(run_id)
            else:
                message.mark_queued(position)

    # -- events -------------------------------------------------------------------------
    async def on_delta(self, run_id: str, text: str, replace: bool = False) -> None:
        """A `delta`: the reply's next text, or with `replace` its text anew."""
        run = self._started(run_id)
        if run.reply is None:
            run.reply = AssistantMessage()
            await self.mount(run.reply)
        if replace:
            await run.reply.replace(text)
        else:
            await run.reply.write(text)

    async def on_partial(self, run_id: str, message: dict[str, Any]) -> None:
        """The reply before its tool calls: settle its text (the next turn is a new reply)."""
        run = self._started(run_id)
        await self._settle_reply(run, reply_text(message))

    async def on_tool(self, run_id: str | None, tool: dict[str, Any]) -> None:
        """A `chat.tool` event: of a run, or (`run_id` None) of a `tool.request` call,
        which shows its block without making a run busy."""
        run = self._started(run_id) if run_id is not None else None
        tools = run.tools if run is not None else self.lone_tools
        call_id = str(tool.get("callId", ""))
        if tool.get("phase") == "start":
            if run is not None:
                await self._settle_reply(run, None)
            args = tool.get("args")
            view = ToolView(
                call_id, str(tool.get("name", "?")), args if isinstance(args, dict) else {}
            )
            block = ToolBlock(view)
            tools[call_id] = block
            await self.mount(block)
            return
        if call_id not in tools:  # its start was missed (a reconnect): show the outcome
            tools[call_id] = ToolBlock(ToolView(call_id, str(tool.get("name", "?"))))
            await self.mount(tools[call_id])
        block = tools[call_id]
        duration = tool.get("durationMs")
        block.finish(
            not tool.get("isError"),
            str(tool.get("summary", "")),
            duration if isinstance(duration, int) else None,
        )
        if run is None:  # a finished call by hand is kept on screen, not in memory
            self.lone_tools.pop(call_id, None)

    async def on_approval(self, approval: dict[str, Any]) -> None:
        """A `tool.approval` event: a new prompt when pending, else settle the shown one."""
        approval_id = str(approval.get("approvalId", ""))
        state = str(approval.get("state", "pending"))
        prompt = self.approvals.get(approval_id)
        if state == "pending":
            if prompt is None:
                self.approvals[approval_id] = prompt = ApprovalPrompt(approval)
                await self.mount(prompt)
            return
        if prompt is not None:
            await prompt.settle(state)

    async def on_final(self, run_id: str, message: dict[str, Any] | None) -> None:
        run = self._started(run_id)
        text = reply_text(message or {})
        if run.reply is None and text.strip():
            run.reply = AssistantMessage()
            await self.mount(run.reply)
        await self._settle_reply(run, text)
        self._end(run)

    async def on_error(self, run_id: str, error: str) -> None:
        run = self._started(run_id)
        await self._settle_reply(run, None)
        for block in run.tools.values():
            if block.view.ok is None:
                block.finish(False, error, None)
        self._end(run)

    async def _settle_reply(self, run: RunView, final_text: str | None) -> None:
        if run.reply is not None:
            await run.reply.settle(final_text)
            run.reply = None

    def _end(self, run: RunView) -> None:
        self.runs.pop(run.run_id, None)
        self.ended.add(run.run_id)
        self._advance_queue()


def reply_text(message: dict[str, Any]) -> str:
    """The text of an assistant message, its blocks joined as the deltas were."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    blocks = content if isinstance(content, list) else []
    return "".join(
        str(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "text"
    )
