"""User text turned into an FTS5 query that cannot be a syntax error, and the time
bounds a search takes (`since` / `until`). Pure functions."""

from __future__ import annotations

import datetime as dt
import re

from gsv_core.errors import InvalidParams

MAX_QUERY_CHARS = 1000
MAX_TERMS = 32
_WORDS = re.compile(r"\w+", re.UNICODE)
# words nearly every message holds: matching them costs time and says nothing
STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "for", "from",
    "had", "has", "have", "i", "in", "is", "it", "me", "my", "of", "on", "or", "so",
    "that", "the", "this", "to", "was", "we", "were", "what", "when", "where", "which",
    "who", "with", "you", "your",
})  # fmt: skip
_AGO = re.compile(r"(\d{1,6})\s*([mhdw])", re.IGNORECASE)
_UNIT_MS = {"m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 7 * 86_400_000}


def query_terms(text: str) -> tuple[str, ...]:
    """The words to search for in `text`, lowercased, each once: stopwords and
    one-letter words (the `s` of `Ada's`) go unless nothing else is left. Raises
    InvalidParams when there is nothing to search for."""
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidParams(f"query is too long: at most {MAX_QUERY_CHARS} characters")
    words = list(dict.fromkeys(w.lower() for w in _WORDS.findall(text)))
    if not words:
        raise InvalidParams("query has no words to search for")
    kept = [w for w in words if w not in STOPWORDS and len(w) > 1] or words
    return tuple(kept[:MAX_TERMS])


def fts_match(terms: tuple[str, ...]) -> str:
    """An FTS5 MATCH expression: each term quoted (so `"`, `-`, `:`, `AND`, `NEAR` and
    `*` are words or nothing, never syntax), joined by OR so that BM25 ranks what holds
    most of them first."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def fts_query(text: str) -> str:
    """`fts_match(query_terms(text))`."""
    return fts_match(query_terms(text))


def parse_time(value: str | None, now_ms: int, name: str) -> int | None:
    """A time bound in epoch ms from an ISO date or date-time (UTC unless it has an
    offset) or an age such as `30m`, `12h`, `7d`, `2w` (that long before now)."""
    if value is None:
        return None
    text = value.strip()
    if ago := _AGO.fullmatch(text):
        return now_ms - int(ago.group(1)) * _UNIT_MS[ago.group(2).lower()]
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise InvalidParams(
            f"{name} {value!r} is not a time: use an ISO date (2026-03-01), a date-time "
            "(2026-03-01T09:30) or an age (30m, 12h, 7d, 2w)"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1000)


def iso(ms: int | None) -> str | None:
    """A UTC ISO time for a result (None stays None)."""
    if ms is None:
        return None
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec="seconds")
