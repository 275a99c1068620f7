"""HistoryCache on its own: the bound, busy sessions kept past it, released once idle."""

from __future__ import annotations

import pytest

from gsv_core.agent.history_cache import TRIM_STEP
from gsv_core.agent.history_cache import HistoryCache


class Session:
    def __init__(self, key: str) -> None:
        self.key = key
        self.busy = False
        self.released = 0
        self.asked = 0

    def release_history(self) -> bool:
        self.asked += 1
        if self.busy:
            return False
        self.released += 1
        return True


def test_only_the_most_recently_used_sessions_stay_past_the_bound() -> None:
    """Using a third session with a bound of two releases the least recently used."""
    cache = HistoryCache(limit=2)
    a, b, c = Session("a"), Session("b"), Session("c")
    for session in (a, b, a, c):
        cache.used(session)
    assert (a.released, b.released, c.released) == (0, 1, 0)
    assert "b" not in cache and len(cache) == 2


def test_a_busy_session_stays_until_a_later_use_finds_it_idle() -> None:
    """A busy session past the bound is kept and released by the next use after it idles."""
    cache = HistoryCache(limit=1)
    a, b = Session("a"), Session("b")
    a.busy = True
    cache.used(a)
    cache.used(b)
    assert a.released == 0 and "a" in cache and len(cache) == 2
    a.busy = False
    cache.used(b)
    assert a.released == 1 and "a" not in cache and len(cache) == 1


def test_a_crowd_of_busy_sessions_costs_each_use_a_few_looks() -> None:
    """A hundred chats at once keep a hundred busy sessions past the bound: a use looks
    at a few of them, not at all (that made a crowd quadratic), and once they idle the
    uses that follow bring the cache back to its bound."""
    cache = HistoryCache(limit=2)
    crowd = [Session(f"s{i}") for i in range(200)]
    for session in crowd:
        session.busy = True
        cache.used(session)
    asked = sum(session.asked for session in crowd)
    assert asked <= TRIM_STEP * len(crowd)
    assert len(cache) == len(crowd)  # all busy: nothing given back
    for session in crowd:
        session.busy = False
    # each use gives back up to TRIM_STEP and adds one
    fresh = [Session(f"f{i}") for i in range(len(crowd) // (TRIM_STEP - 1) + 1)]
    for session in fresh:
        cache.used(session)
    assert len(cache) == 2 and all(session.released == 1 for session in crowd)
    assert [key in cache for key in ("f0", fresh[-2].key, fresh[-1].key)] == [False, True, True]


def test_a_bound_below_one_is_refused() -> None:
    """A cache that holds nothing would give back each history as soon as it was loaded."""
    with pytest.raises(ValueError):
        HistoryCache(limit=0)
