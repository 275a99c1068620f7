"""The blocks of the conversation: what you wrote, the agent's streamed Markdown replies,
tool calls as collapsible one-liners, and notices (command answers, errors, setup help).

States are spelled out in text and symbols (queued, ✓, ✗), never by colour alone, so
the chat reads the same under NO_COLOR. Every text here comes from elsewhere (the agent,
tools, the gateway), so it is shown through `gsv_cli.safe_text`: literally, with control
characters visible and inert; a click on a Markdown link does not open it (ChatView
shows its target first).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Collapsible
from textual.widgets import Markdown
from textual.widgets import Static
from textual.widgets.markdown import MarkdownStream

from gsv_cli.safe_text import neutralise
from gsv_cli.safe_text import plain_content
from gsv_cli.tui.transcript import ToolView

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
SPIN_SECONDS = 0.1


class UserMessage(Widget):
    """A message you sent; shows `queued` (and its place) until its run starts, and why it
    was not sent when that fails."""

    DEFAULT_CLASSES = "message"

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text
        self.queue_position: int | None = None

    def compose(self) -> ComposeResult:
        yield Static(plain_content(self.text), classes="text")
        yield Static("", classes="state")

    @property
    def queued(self) -> bool:
        return self.has_class("-queued")

    def mark_queued(self, position: int) -> None:
        self.queue_position = position
        self.add_class("-queued")
        self._state(f"⏳ queued (position {position}): it runs when the current run ends")

    def mark_started(self) -> None:
        self.queue_position = None
        self.remove_class("-queued")
        self._state("")

    def mark_failed(self, reason: str) -> None:
        self.remove_class("-queued")
        self.add_class("-failed")
        self._state(f"✗ not sent: {reason}")

    def _state(self, text: str) -> None:
        state = self.query_one(".state", Static)
        state.update(plain_content(text))
        state.display = bool(text)


class AssistantMessage(Markdown):
    """One reply of the agent, streamed in as `delta` events arrive."""

    DEFAULT_CLASSES = "message"

    def __init__(self, markdown: str = "") -> None:
        super().__init__(neutralise(markdown), open_links=False)
        self._stream: MarkdownStream | None = None
        self.streamed = ""

    async def write(self, text: str) -> None:
        if self._stream is None:
            self._stream = Markdown.get_stream(self)
        self.streamed += text
        await self._stream.write(neutralise(text))

    async def replace(self, text: str) -> None:
        """Start the reply over with `text` (the model answered again in other words)."""
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None
        self.streamed = ""
        await self.update("")
        await self.write(text)

    async def settle(self, final_text: str | None = None) -> None:
        """End the stream; show `final_text` instead when the deltas were missed."""
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None
        if final_text and final_text.strip() != self.streamed.strip():
            self.streamed = final_text
            await self.update(neutralise(final_text))


class Notice(Static):
    """A line from the TUI or the gateway: command answers, errors, reconnects."""

    def __init__(self, text: str, kind: str = "info") -> None:
        prefix = {"error": "✗ ", "info": "", "dim": ""}.get(kind, "")
        super().__init__(plain_content(prefix + text), classes=f"notice -{kind}")
        self.kind = kind
        self.text = text


class MarkdownNotice(Markdown):
    """A longer answer worth Markdown: /help, /status, the model setup commands."""

    def __init__(self, markdown: str, kind: str = "info") -> None:
        super().__init__(neutralise(markdown), classes=f"notice -{kind}", open_links=False)
        self.kind = kind
        self.text = markdown


class ToolBlock(Collapsible):
    """A tool call: `⠋ Read · node-a · README.md` while it runs, then `✓ ... · 12 ms` or
    `✗ ... · failed`; expanded it shows the arguments and the result summary."""

    def __init__(self, view: ToolView) -> None:
        self.view = view
        self._frame = 0
        self._timer: Timer | None = None
        super().__init__(
            Static(plain_content(view.body()), classes="tool-body"),
            title="",
            collapsed=view.ok is not False,
            classes="tool",
        )
        self._show()

    def on_mount(self) -> None:
        if self.view.ok is None:
            self._timer = self.set_interval(SPIN_SECONDS, self._spin)

    def finish(self, ok: bool, summary: str, duration_ms: int | None) -> None:
        self.view.finish(ok, summary, duration_ms)
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if not ok:
            self.collapsed = False  # an error is worth seeing without a click
        self._show()
        self.query_one(".tool-body", Static).update(plain_content(self.view.body()))

    @property
    def symbol(self) -> str:
        if self.view.ok is None:
            return SPINNER[self._frame % len(SPINNER)]
        return "✓" if self.view.ok else "✗"

    def _spin(self) -> None:
        self._frame += 1
        self._show()

    def _show(self) -> None:
        self.set_class(self.view.ok is None, "-running")
        self.set_class(self.view.ok is False, "-error")
        self.set_class(bool(self.view.ok), "-ok")
        self.title = plain_content(f"{self.symbol} {self.view.title()}")  # type: ignore[assignment]
