"""User text never reaches FTS5 as syntax; time bounds say what they accept."""

from __future__ import annotations

import pytest

from gsv_core.errors import InvalidParams
from gsv_core.memory.query import MAX_QUERY_CHARS
from gsv_core.memory.query import fts_query
from gsv_core.memory.query import parse_time


def test_words_are_quoted_and_joined_by_or() -> None:
    """Each word is one quoted term; stopwords go unless nothing else is left."""
    assert fts_query("What did the Vet say?") == '"vet" OR "say"'
    assert fts_query("the") == '"the"'


@pytest.mark.parametrize(
    "text", ['say "hi', "a - b", "col:umn", "NEAR(x y)", "x AND OR NOT", "star*", "(((x", "^x"]
)
def test_fts_syntax_in_user_text_is_only_words(text: str) -> None:
    """Quotes, minus, colons, operators, stars and parentheses make no syntax."""
    query = fts_query(text)
    assert all(part.startswith('"') and part.endswith('"') for part in query.split(" OR "))


@pytest.mark.parametrize("text", ["", "   ", "?!--:", '""'])
def test_a_query_without_words_is_refused(text: str) -> None:
    """Nothing to search for is a 400 that says so."""
    with pytest.raises(InvalidParams, match="no words"):
        fts_query(text)


def test_a_huge_query_is_refused() -> None:
    """A query past the limit is refused with the limit named."""
    with pytest.raises(InvalidParams, match=str(MAX_QUERY_CHARS)):
        fts_query("word " * MAX_QUERY_CHARS)


def test_times_take_dates_datetimes_and_ages() -> None:
    """ISO dates are UTC midnight; an age counts back from now."""
    assert parse_time("1970-01-02", 0, "since") == 86_400_000
    assert parse_time("1970-01-01T01:00+01:00", 0, "since") == 0
    assert parse_time("2h", 10_000_000, "since") == 10_000_000 - 7_200_000
    assert parse_time(None, 0, "since") is None


@pytest.mark.parametrize("value", ["yesterday", "7 days", "2026-13-01", "-3d", ""])
def test_a_bad_time_is_refused_with_what_works(value: str) -> None:
    """The error names the parameter and the accepted shapes."""
    with pytest.raises(InvalidParams, match=r"until .* ISO date"):
        parse_time(value, 0, "until")
