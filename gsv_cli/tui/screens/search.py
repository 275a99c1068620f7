"""`/search QUERY`: what `memory.search` finds in every past conversation and note, one
line per hit (the session key or note file, the time, the snippet), all shown as plain
text. Enter on a conversation's hit dismisses with that hit (the chat switches to its
session and scrolls to the message); a note's hit has no session to open. Esc closes."""

from __future__ import annotations

from typing import Any
from typing import ClassVar

from textual import on
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList
from textual.widgets import Static
from textual.widgets.option_list import Option

from gsv_cli.safe_text import plain_content
from gsv_core.client import GatewayClient
from gsv_core.errors import GsvError
from gsv_core.protocol.methods import MEMORY_SEARCH

SEARCH_LIMIT = 20
SNIPPET_WIDTH = 90


def hit_line(hit: dict[str, Any]) -> str:
    """One hit as a line: where it came from, when, and its snippet on one line (the
    `**` around matched words dropped)."""
    snippet = " ".join(str(hit.get("snippet", "")).replace("**", "").split())
    if len(snippet) > SNIPPET_WIDTH:
        snippet = snippet[:SNIPPET_WIDTH] + "…"
    if hit.get("source") == "note":
        lines = hit.get("lines") or []
        span = f":{lines[0]}-{lines[1]}" if len(lines) == 2 else ""
        return f"note {hit.get('path', '?')}{span}  {snippet}"
    when = str(hit.get("time", ""))[:16].replace("T", " ")
    archived = " (archived)" if hit.get("archived") else ""
    return f"{hit.get('sessionKey', '?')} · {when}{archived}  {snippet}"


class SearchScreen(ModalScreen[dict[str, Any] | None]):
    """Hits of one query; dismisses with the conversation hit to open, or None."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Close")]

    def __init__(self, client: GatewayClient, query: str) -> None:
        super().__init__()
        self.client = client
        self.search_query = query
        self.hits: list[dict[str, Any]] = []
        self.searched = False

    def compose(self) -> ComposeResult:
        with Vertical(id="search"):
            title = f"Search: {self.search_query} — Enter open session · Esc close"
            yield Static(plain_content(title), id="search-title")
            yield OptionList(id="search-hits")
            yield Static("Searching…", id="search-status")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()
        self.run_search()

    @work(exclusive=True, group="search")
    async def run_search(self) -> None:
        status = self.query_one("#search-status", Static)
        params = {"query": self.search_query, "limit": SEARCH_LIMIT}
        try:
            found = await self.client.call(MEMORY_SEARCH, params)
        except GsvError as exc:
            status.update(plain_content(f"Cannot search: {exc.message}"))
            self.searched = True
            return
        self.hits = list(found.get("results") or [])
        options = self.query_one(OptionList)
        for index, hit in enumerate(self.hits):
            options.add_option(Option(plain_content(hit_line(hit)), id=str(index)))
        count = len(self.hits)
        if count:
            options.highlighted = 0
        status.update("No hits." if count == 0 else f"{count} hit{'s' * (count != 1)}.")
        self.searched = True

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        hit = self.hits[int(event.option.id or 0)]
        if hit.get("source") == "note" or not hit.get("sessionKey"):
            self.notify("A note has no session to open.", markup=False)
            return
        self.dismiss(hit)

    def action_close(self) -> None:
        self.dismiss(None)
