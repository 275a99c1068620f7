"""What the chat has been shown of a step's answer, so that a step the model answers again
(a cut stream tried once more, or the next model of the chain: providers/failover.py)
never shows its words twice.

After `restart()` the new attempt's text is held back while it repeats what was shown,
and only what goes beyond it is shown. An attempt that says something else replaces the
shown text (`replace`: the client discards what it showed of this step). Text found to be
a tool call written as text (providers/tool_call_modes.py) is retracted the same way.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Shown:
    text: str  # to show: appended, or in place of the step's text when `replace`
    replace: bool = False


class ShownText:
    def __init__(self) -> None:
        self.shown = ""  # what the chat shows of this step
        self.attempt = ""  # what the current attempt has said

    def restart(self) -> None:
        self.attempt = ""

    def add(self, text: str) -> Shown | None:
        """What to show for the attempt's next `text`; None while it repeats the shown."""
        self.attempt += text
        if self.shown.startswith(self.attempt):
            return None
        if self.attempt.startswith(self.shown):
            new = self.attempt[len(self.shown) :]
            self.shown = self.attempt
            return Shown(new)
        self.shown = self.attempt
        return Shown(self.attempt, replace=True)

    def retract(self) -> Shown | None:
        """The attempt's text so far was not answer text: the chat drops what it shows."""
        self.attempt = ""
        if not self.shown:
            return None
        self.shown = ""
        return Shown("", replace=True)

    def finish(self) -> Shown | None:
        """At the step's end: the answer in place of the shown text when they differ (an
        attempt that ended before repeating all a cut one had shown)."""
        if self.shown == self.attempt:
            return None
        self.shown = self.attempt
        return Shown(self.attempt, replace=True)
