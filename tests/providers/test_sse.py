"""The server-sent-events decoder the OpenAI-compatible provider reads its stream with
(gsv_core/providers/sse.py): the format's rules, and a round trip of any payloads."""

from __future__ import annotations

import os

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from gsv_core.providers.sse import ServerEvent
from gsv_core.providers.sse import SseDecoder

EXAMPLES = int(os.environ.get("GSV_FUZZ_EXAMPLES", "60"))


def decode(lines: list[str]) -> list[ServerEvent]:
    decoder = SseDecoder()
    events = [event for line in lines if (event := decoder.line(line)) is not None]
    last = decoder.end()
    return [*events, last] if last is not None else events


def test_fields_comments_and_blank_lines() -> None:
    lines = [
        ": keep-alive",
        "",
        "event: delta",
        "data: one",
        "",
        "data:two",
        "id: 7",
        "retry: 5",
        "",
    ]
    assert decode(lines) == [ServerEvent("one", "delta"), ServerEvent("two")]


def test_data_lines_of_one_event_join_with_newlines() -> None:
    assert decode(["data: {", 'data:  "a": 1}', ""]) == [ServerEvent('{\n "a": 1}')]


def test_an_event_without_data_is_dropped_and_its_name_forgotten() -> None:
    assert decode(["event: ping", "", "data: x", ""]) == [ServerEvent("x")]


def test_the_last_event_counts_without_its_blank_line() -> None:
    assert decode(["data: a", "", "data: [DONE]"]) == [ServerEvent("a"), ServerEvent("[DONE]")]


def test_odd_lines_carry_nothing() -> None:
    """A field name it does not know, a line with no colon, a colon only: no event."""
    assert decode(["foo: bar", "nocolon", ":", "data", ""]) == [ServerEvent("")]


payloads = st.lists(
    st.text(alphabet=st.characters(blacklist_characters="\r\n"), min_size=0, max_size=40),
    min_size=1,
    max_size=8,
)


@settings(max_examples=EXAMPLES, deadline=None)
@given(payloads, st.lists(st.booleans(), min_size=8, max_size=8))
def test_any_payloads_come_back_as_sent(texts: list[str], comments: list[bool]) -> None:
    """Each payload sent as one `data:` event (a comment before some) comes back whole,
    leading spaces after the first one included."""
    lines: list[str] = []
    for text, comment in zip(texts, comments, strict=False):
        if comment:
            lines.append(": ping")
        lines += [f"data: {text}", ""]
    assert [event.data for event in decode(lines)] == texts
