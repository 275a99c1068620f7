"""Server-sent events from the lines of an HTTP body: how OpenAI-compatible servers stream
chat completions (`data: {json}` events, `data: [DONE]` last).

Read here rather than through the SDK's stream class, which builds a pydantic model of
every chunk: that was the largest single cost of a turn in the gateway (bench/turn_profile.py),
and the chunk reader only needs the plain JSON.

The format (WHATWG HTML, "server-sent events"): lines end in CRLF, LF or a lone CR; a
line `field: value` (one space after the colon is dropped), a line starting with `:` is a
comment (OpenRouter sends keep-alive comments), and a blank line ends an event. Several
`data` lines of one event are joined with newlines. `id` and `retry` mean nothing to a
chat completion and are ignored.

The body's bytes are cut into lines here too (`lines`): httpx's own line reader decodes
the text and splits it in two more generator layers, a tenth of a turn's CPU for a
one-line answer. A line, or an event's data, that grows past `MAX_BYTES` without ending
is `StreamTooLong`: a server streaming one endless line would otherwise fill the
gateway's memory until the model call's timeout.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from collections.abc import AsyncIterable
from dataclasses import dataclass
from dataclasses import field

MAX_BYTES = 16 * 1024 * 1024  # of a line or an event: far past a chunk, a 1 MB tool call


class StreamTooLong(ValueError):
    """A line or an event of the stream grew past MAX_BYTES without ending."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} passed {MAX_BYTES // (1024 * 1024)} MiB without ending")


@dataclass(frozen=True)
class ServerEvent:
    data: str
    event: str | None = None


@dataclass
class SseDecoder:
    """Feed it the body's lines one by one; it answers each event as it completes."""

    _event: str | None = None
    _data: list[str] = field(default_factory=list)
    _size: int = 0  # characters in _data (a character is at least a byte)

    def line(self, line: str) -> ServerEvent | None:
        """The event this line completes (a blank line after data), else None."""
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._size += len(value) + 1
            if self._size > MAX_BYTES:
                raise StreamTooLong("an event")
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
        self._data, self._event, self._size = [], None, 0
        return event


async def lines(body: AsyncIterable[bytes]) -> AsyncGenerator[str, None]:
    """The lines of a body arriving in chunks cut anywhere (inside a line, between a CR
    and its LF, inside a UTF-8 character), without their ends, decoded as UTF-8 (an
    invalid byte becomes U+FFFD, as httpx decodes); the last line may lack its end."""
    pending: list[bytes] = []  # the start of a line not ended yet, as it came
    held = 0  # its bytes
    async for chunk in body:
        if not chunk:
            continue
        ends_line = b"\n" in chunk or b"\r" in chunk or (pending and pending[-1][-1:] == b"\r")
        if ends_line:
            found = b"".join([*pending, chunk]).splitlines(keepends=True)  # only CR, LF, CRLF
            # an unended line, or a CR whose LF may start the next chunk, waits for more
            pending = [found.pop()] if found and not found[-1].endswith(b"\n") else []
            held = len(pending[0]) if pending else 0
            for line in found:
                yield line.rstrip(b"\r\n").decode("utf-8", "replace")
        else:
            pending.append(chunk)  # joined once its line ends: a long line is copied once
            held += len(chunk)
        if held > MAX_BYTES:
            raise StreamTooLong("a line")
    if pending:  # never empty parts
        yield b"".join(pending).rstrip(b"\r\n").decode("utf-8", "replace")
