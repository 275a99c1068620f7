"""Ctrl+S: the session picker. Lists `sessions.list`, previews the highlighted session's
last messages (`session.preview`), switches to one (Enter), starts a new one (n: you
name it) or labels one (r: `session.patch`). Dismisses with the key to switch to, or
None."""

from __future__ import annotations

import datetime
from typing import Any
from typing import ClassVar

from textual import on
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.binding import BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input
from textual.widgets import OptionList
from textual.widgets import Static
from textual.widgets.option_list import Option

from gsv_cli.safe_text import neutralise
from gsv_cli.safe_text import plain_content
from gsv_cli.tui import session_info
from gsv_cli.tui.transcript import AssistantItem
from gsv_cli.tui.transcript import ToolItem
from gsv_cli.tui.transcript import UserItem
from gsv_cli.tui.transcript import history_items
from gsv_core.client import GatewayClient
from gsv_core.errors import GsvError

PREVIEW_MESSAGES = 6


def new_session_key(name: str, current: str) -> str:
    """The key for a session you name: `ideas` -> `agent:<current agent>:ideas`; a name
    with `:` is taken as a whole key. Whitespace becomes `-` (keys have none)."""
    cleaned = "-".join(name.split())
    if ":" in cleaned:
        return cleaned
    parts = current.split(":")
    agent = parts[1] if len(parts) > 2 and parts[0] == "agent" and parts[1] else "main"
    return f"agent:{agent}:{cleaned}"


def session_line(entry: dict[str, Any], current: str) -> str:
    key = str(entry.get("sessionKey", "?"))
    marker = "●" if key == current else " "
    name = f"{entry['label']} ({key})" if entry.get("label") else key
    count = entry.get("messageCount")
    details = [f"{count} messages"] if isinstance(count, int) else []
    if entry.get("lastActiveAt"):
        moment = datetime.datetime.fromtimestamp(entry["lastActiveAt"] / 1000)
        details.append(moment.strftime("%Y-%m-%d %H:%M"))
    return f"{marker} {name}" + (f"  · {' · '.join(details)}" if details else "")


def preview_lines(messages: list[dict[str, Any]], width: int = 70) -> str:
    lines = []
    for item in history_items(messages)[-PREVIEW_MESSAGES:]:
        if isinstance(item, UserItem):
            who, text = "you", item.text
        elif isinstance(item, AssistantItem):
            who, text = "agent", item.text
        elif isinstance(item, ToolItem):
            who, text = "tool", item.view.title()
        else:
            continue
        flat = " ".join(text.split())
        lines.append(f"{who}: {flat[:width]}" + ("…" if len(flat) > width else ""))
    return "\n".join(lines) or "(no messages yet)"


class SessionPicker(ModalScreen[str | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("n", "new", "New"),
        Binding("r", "rename", "Rename"),
    ]

    def __init__(self, client: GatewayClient, current: str, current_label: str | None) -> None:
        super().__init__()
        self.client = client
        self.current = current
        self.current_label = current_label
        self.sessions: list[dict[str, Any]] = []
        self.mode: str | None = None  # "new" | "rename" while the input is open

    def compose(self) -> ComposeResult:
        with Vertical(id="picker"):
            yield Static(
                Content("Sessions — Enter switch · n new · r rename · Esc close"), id="picker-title"
            )
            yield OptionList(id="session-list")
            yield Static("", id="session-preview")
            yield Input(id="session-input")

    def on_mount(self) -> None:
        self.query_one(Input).display = False
        self.query_one(OptionList).focus()
        self.load()

    @work(exclusive=True, group="list")
    async def load(self) -> None:
        try:
            self.sessions = await session_info.list_sessions(self.client)
        except GsvError as exc:
            box = self.query_one("#session-preview", Static)
            box.update(plain_content(f"cannot list sessions: {exc}"))
            return
        if not any(s.get("sessionKey") == self.current for s in self.sessions):
            current: dict[str, Any] = {"sessionKey": self.current, "label": self.current_label}
            self.sessions.insert(0, current)
        options = self.query_one(OptionList)
        options.clear_options()
        for entry in self.sessions:
            line = session_line(entry, self.current)
            options.add_option(Option(plain_content(line), id=str(entry["sessionKey"])))
        keys = [s.get("sessionKey") for s in self.sessions]
        options.highlighted = keys.index(self.current) if self.current in keys else 0

    @on(OptionList.OptionHighlighted)
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id:
            self.show_preview(event.option.id)

    @work(exclusive=True, group="preview")
    async def show_preview(self, key: str) -> None:
        box = self.query_one("#session-preview", Static)
        try:
            messages = await session_info.preview(self.client, key, PREVIEW_MESSAGES * 3)
        except GsvError as exc:
            box.update(plain_content(f"cannot preview {key}: {exc}"))
            return
        box.update(plain_content(preview_lines(messages)))

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_close(self) -> None:
        if self.mode is not None:
            self._close_input()
        else:
            self.dismiss(None)

    def action_new(self) -> None:
        self._open_input("new", "", "Name of the new session (Enter creates it)")

    def action_rename(self) -> None:
        key = self._highlighted_key()
        if key is None:
            return
        entry = next((s for s in self.sessions if s.get("sessionKey") == key), {})
        self._open_input("rename", str(entry.get("label") or ""), neutralise(f"Label for {key}"))

    def _highlighted_key(self) -> str | None:
        options = self.query_one(OptionList)
        if options.highlighted is None or not self.sessions:
            return None
        return options.get_option_at_index(options.highlighted).id

    def _open_input(self, mode: str, value: str, placeholder: str) -> None:
        self.mode = mode
        field = self.query_one(Input)
        field.value = value
        field.placeholder = placeholder
        field.display = True
        field.focus()

    def _close_input(self) -> None:
        self.mode = None
        self.query_one(Input).display = False
        self.query_one(OptionList).focus()

    @on(Input.Submitted)
    async def _submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        if self.mode == "new" and value:
            self.dismiss(new_session_key(value, self.current))
            return
        if self.mode == "rename":
            key = self._highlighted_key()
            if key is not None:
                self.do_rename(key, value)
        self._close_input()

    @work(exclusive=True, group="rename")
    async def do_rename(self, key: str, label: str) -> None:
        try:
            await session_info.rename(self.client, key, label)
        except GsvError as exc:
            self.notify(neutralise(f"rename failed: {exc}"), severity="error", markup=False)
            return
        if key == self.current:
            self.current_label = label or None
        self.load()
