"""How a one-shot chat reply reaches stdout (`gsv chat "..."`).

On a terminal the reply is Markdown, re-rendered as its text streams in; piped or
redirected it is the model's text as it came, so scripts and `> answer.md` get the raw
Markdown. Either way a control character is shown as a stand-in, never obeyed. Each
writer takes the text piece by piece (`add`) and is told where a message ends (`end`:
before a tool runs or an approval is asked, and at the end of the run).
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING
from typing import Protocol

from gsv_cli import output
from gsv_cli.safe_text import neutralise

if TYPE_CHECKING:
    from rich.live import Live


REDRAW_S = 0.05  # a terminal redraw at most this often while a reply streams


class ReplyWriter(Protocol):
    def add(self, text: str) -> None: ...

    def replace(self, text: str) -> None:
        """The message starts over with `text` (the model answered it again otherwise)."""
        ...

    def end(self) -> None: ...


def reply_writer() -> ReplyWriter:
    """Markdown for a person at a terminal, the raw text for anything else."""
    return MarkdownReply() if sys.stdout.isatty() else RawReply()


class RawReply:
    """The text as it streams, each message ended by a line break."""

    def __init__(self) -> None:
        self.at_line_start = True

    def add(self, text: str) -> None:
        if text:
            output.write_text(text)
            self.at_line_start = text.endswith("\n")

    def replace(self, text: str) -> None:
        """What was written stays (a stream cannot take it back): the new text follows
        on a line of its own."""
        self.end()
        self.add(text)

    def end(self) -> None:
        if not self.at_line_start:
            output.write_text("\n")
            self.at_line_start = True


class MarkdownReply:
    """The message so far, rendered again as pieces come (at most every REDRAW_S: each
    render parses the whole message, so once per piece would cost the square of its
    length), and whole at the end. The model's text may quote a
    stranger: rich's Markdown never parses rich markup (`[red]` stays literal), control
    characters are neutralised first (Markdown passes ESC on), and links show their
    address instead of hiding it behind a terminal hyperlink."""

    def __init__(self) -> None:
        self.text = ""
        self.live: Live | None = None
        self.drawn_at = 0.0  # time.monotonic() of the last render

    def add(self, text: str) -> None:
        if not text:
            return
        self.text += text
        if self.live is None:
            self.live = self._start()
        if time.monotonic() - self.drawn_at >= REDRAW_S:
            self._draw(self.live)

    def replace(self, text: str) -> None:
        self.text = ""
        self.add(text)

    def end(self) -> None:
        if self.live is not None:
            self._draw(self.live)  # the whole message, whatever the last render missed
            self.live.stop()  # leaves it on the screen
        self.live, self.text = None, ""

    def _draw(self, live: Live) -> None:
        from rich.markdown import Markdown

        live.update(Markdown(neutralise(self.text), hyperlinks=False), refresh=True)
        self.drawn_at = time.monotonic()

    @staticmethod
    def _start() -> Live:
        from rich.live import Live

        # no redirection: tool lines and prompts come only after end()
        live = Live(console=output.out(), auto_refresh=False,
                    redirect_stdout=False, redirect_stderr=False)  # fmt: skip
        live.start()
        return live
