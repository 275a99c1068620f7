"""Server-sent events from the lines of an HTTP body: how OpenAI-compatible servers stream
chat completions (`data: {json}` events, `data: [DONE]` last).

Read here rather than through the SDK's stream class, which builds a pydantic model of
every chunk: that was the largest single cost of a turn in the gateway (bench/turn_profile.py),
and the chunk reader only needs the plain JSON.

The format (WHATWG HTML, "server-sent events"): a line `field: value` (one space after the
colon is dropped), a line starting with `:` is a comment (OpenRouter sends keep-alive
comments), and a blank line ends an event. Several `data` lines of one event are joined
with newlines. `id` and `retry` mean nothing to a chat completion and are ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field


@dataclass(frozen=True)
class ServerEvent:
    data: str
    event: str | None = None


@dataclass
class SseDecoder:
    """Feed it the body's lines one by one; it answers each event as it completes."""

    _event: str | None = None
    _data: list[str] = field(default_factory=list)

    def line(self, line: str) -> ServerEvent | None:
        """The event this line completes (a blank line after data), else None."""
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None

    def end(self) -> ServerEvent | None:
        """The body ended: an event whose closing blank line never came (some servers
        end the body right after the last `data` line)."""
        return self._dispatch()

    def _dispatch(self) -> ServerEvent | None:
        if not self._data:  # an event without data carries nothing (the spec drops it)
            self._event = None
            return None
        event = ServerEvent("\n".join(self._data), self._event)
        self._data, self._event = [], None
        return event
