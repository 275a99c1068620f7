"""The lines around the conversation: the status bar (gateway and connection state,
session, model and thinking level, tokens, spend today, nodes online), the banner for connection
trouble, and the activity line while the agent works."""

from __future__ import annotations

from dataclasses import dataclass

from textual.content import Content
from textual.timer import Timer
from textual.widgets import Static

from gsv_cli.safe_text import plain_content
from gsv_cli.tui.widgets.messages import SPIN_SECONDS
from gsv_cli.tui.widgets.messages import SPINNER
from gsv_core.usage.spend import usd

CONNECTION_SYMBOLS = {
    "connecting": "○ connecting",
    "connected": "● connected",
    "reconnecting": "◌ reconnecting",
    "offline": "✗ offline",
}


def format_tokens(count: int) -> str:
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        return f"{count / 1000:.1f}k"
    return f"{count / 1_000_000:.1f}M"


@dataclass
class Status:
    url: str
    connection: str = "connecting"
    session: str = ""
    label: str | None = None
    model: str = ""
    thinking: str = "off"
    tokens_in: int = 0
    tokens_out: int = 0
    nodes: int | None = None
    spent_today: float | None = None  # USD since local midnight, all sessions (usage ledger)

    def render(self) -> str:
        """Two lines: where, which session and today's spend (all sessions; this one's
        tokens are on the next line); then model, thinking, tokens and nodes."""
        session = f"{self.label} ({self.session})" if self.label else self.session
        where = f"{CONNECTION_SYMBOLS.get(self.connection, self.connection)} · {self.url}"
        details = [f"{self.model} · think {self.thinking}"] if self.model else []
        details.append(
            f"tokens {format_tokens(self.tokens_in)} in/{format_tokens(self.tokens_out)} out"
        )
        if self.nodes is not None:
            details.append(f"{self.nodes} node{'' if self.nodes == 1 else 's'}")
        spend = f" · {usd(self.spent_today)} today" if self.spent_today is not None else ""
        return f"{where} · {session}{spend}\n" + " · ".join(details)


class StatusBar(Static):
    def __init__(self, status: Status) -> None:
        super().__init__(id="status-bar")
        self.status = status

    def on_mount(self) -> None:
        self.show()

    def show(self) -> None:
        self.update(plain_content(self.status.render()))
        self.set_class(self.status.connection != "connected", "-trouble")


class Banner(Static):
    """One message about the connection, shown while there is trouble."""

    def __init__(self) -> None:
        super().__init__(id="banner")
        self.display = False
        self.text = ""

    def show(self, text: str, kind: str = "warning") -> None:
        self.text = text
        self.update(plain_content(text))
        self.set_classes(f"-{kind}")
        self.display = True

    def hide(self) -> None:
        self.text = ""
        self.display = False


class Activity(Static):
    """`⠋ working… (Esc stops)` while a run of this session is in progress."""

    def __init__(self) -> None:
        super().__init__(id="activity")
        self.display = False
        self._frame = 0
        self._timer: Timer | None = None

    def set_busy(self, busy: bool) -> None:
        if busy == self.display:
            return
        self.display = busy
        if busy:
            self._frame = 0
            self._render_frame()
            self._timer = self.set_interval(SPIN_SECONDS, self._spin)
        elif self._timer is not None:
            self._timer.stop()
            self._timer = None

    def _spin(self) -> None:
        self._frame += 1
        self._render_frame()

    def _render_frame(self) -> None:
        spinner = SPINNER[self._frame % len(SPINNER)]
        self.update(Content(f"{spinner} working…  Esc stops the run"))
