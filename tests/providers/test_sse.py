"""The server-sent-events decoder the OpenAI-compatible provider reads its stream with
(gsv_core/providers/sse.py): the format's rules, a round trip of any payloads, and the
body's bytes cut into lines however they arrive."""

from __future__ import annotations

import itertools
import os
from collections.abc import AsyncIterator

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from gsv_core.providers.sse import MAX_BYTES
from gsv_core.providers.sse import ServerEvent
from gsv_core.providers.sse import SseDecoder
from gsv_core.providers.sse import StreamTooLong
from gsv_core.providers.sse import lines

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


# -- the body's bytes cut into lines -----------------------------------------------------
async def _chunks(parts: list[bytes]) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def body_lines(parts: list[bytes]) -> list[str]:
    return [line async for line in lines(_chunks(parts))]


async def test_lines_end_in_lf_crlf_or_a_lone_cr() -> None:
    body = [b"data: one\n", b"data: two\r\n", b"data: three\rdata: four\r\n\r\n"]
    assert await body_lines(body) == ["data: one", "data: two", "data: three", "data: four", ""]


async def test_a_crlf_cut_between_its_cr_and_lf_ends_one_line() -> None:
    # read as two line ends, the LF would end the event too early: a blank line
    assert await body_lines([b"data: a\r", b"\ndata: b\r\n", b"\r", b"\n"]) == [
        "data: a",
        "data: b",
        "",
    ]


async def test_a_line_cut_anywhere_comes_back_whole() -> None:
    text = "data: héllo 😀 wörld\n\n".encode()
    for cut in range(1, len(text)):  # inside the UTF-8 characters too
        assert await body_lines([text[:cut], text[cut:]]) == ["data: héllo 😀 wörld", ""]
    assert await body_lines([bytes([b]) for b in text]) == ["data: héllo 😀 wörld", ""]


async def test_the_last_line_counts_without_its_end() -> None:
    assert await body_lines([b"data: [DONE]"]) == ["data: [DONE]"]
    assert await body_lines([b"data: x\n", b"data: ", b"[DONE]\r"]) == ["data: x", "data: [DONE]"]
    assert await body_lines([]) == []


async def test_invalid_utf8_is_replaced_not_raised() -> None:
    assert await body_lines([b"data: \xff\xfe ok\n"]) == ["data: \ufffd\ufffd ok"]


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    st.lists(
        st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n")),
        max_size=8,
    ),
    st.sampled_from(["\n", "\r\n", "\r"]),
    st.lists(st.integers(min_value=0, max_value=200), max_size=6),
)
async def test_any_text_cut_anywhere_gives_its_lines(
    texts: list[str], end: str, cuts: list[int]
) -> None:
    body = "".join(text + end for text in texts).encode()
    points = sorted({min(c, len(body)) for c in cuts})
    parts = [body[a:b] for a, b in itertools.pairwise([0, *points, len(body)])]
    assert await body_lines(parts) == texts


MIB = 1024 * 1024


async def test_a_line_that_never_ends_stops_at_the_limit_not_at_the_memory() -> None:
    """A server streaming one endless line: read up to the limit, then StreamTooLong.
    The body is bounded too (40 MiB), so a broken limit ends the test, not the machine."""
    taken = 0

    async def endless() -> AsyncIterator[bytes]:
        nonlocal taken
        yield b"data: "
        for _ in range(40):
            taken += 1
            yield b"x" * MIB

    with pytest.raises(StreamTooLong, match="a line passed 16 MiB without ending"):
        async for _ in lines(endless()):
            pass
    assert taken == MAX_BYTES // MIB  # "data: " and 16 MiB: past the limit, read no further


async def test_an_unended_tail_after_a_line_end_counts_too() -> None:
    with pytest.raises(StreamTooLong, match="a line"):
        await body_lines([b"data: a\n" + b"x" * (MAX_BYTES + 1)])


async def test_a_long_line_that_ends_under_the_limit_comes_back() -> None:
    big = b"x" * (2 * MIB)
    assert await body_lines([b"data: ", big[:MIB], big[MIB:], b"\n\n"]) == [
        "data: " + "x" * (2 * MIB),
        "",
    ]


def test_an_event_of_endless_data_lines_stops_at_the_limit() -> None:
    decoder = SseDecoder()
    line = "data: " + "y" * MIB
    with pytest.raises(StreamTooLong, match="an event passed 16 MiB without ending"):
        for _ in range(40):
            assert decoder.line(line) is None


def test_the_event_limit_is_per_event() -> None:
    decoder = SseDecoder()
    for _ in range(3):  # 3 x 10 MiB in three events: each under the limit
        for _ in range(10):
            decoder.line("data: " + "z" * (MIB - 1))
        event = decoder.line("")
        assert event is not None and len(event.data) == 10 * MIB - 1
