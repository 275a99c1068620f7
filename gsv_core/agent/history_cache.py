"""Which sessions keep their history in memory: the most recently used ones, up to a
bound; an older session gives its history back once it is idle (its next use reloads it
from the store). Without this a long-running gateway would hold every history it ever
loaded: every sub-agent, cron run and messenger peer has a session of its own."""

from __future__ import annotations

from collections import OrderedDict
from itertools import islice
from typing import Protocol

# Histories kept whatever their age: enough for the sessions a person and their agents
# use at once (chats, channel peers, a few cron jobs and sub-agents), so those never
# reload; a history is bounded by compaction, so 32 of them stay small next to a
# gateway that kept thousands.
DEFAULT_LIMIT = 32

# sessions past the bound one use looks at, at most: a crowd of busy sessions (a hundred
# chats at once) must not make every use walk all of them (quadratic over the crowd)
TRIM_STEP = 4


class Releasable(Protocol):
    """A session whose history can be given back (gsv_core.agent.session.SessionActor)."""

    @property
    def key(self) -> str: ...

    def release_history(self) -> bool:
        """Drop the cached history unless the session is busy; whether it did."""
        ...


class HistoryCache:
    """The sessions that may hold a history, least recently used first. A busy session
    past the bound stays until a later trim finds it idle: a trim that finds it busy
    counts it as just used (it is: a run holds it), so the next trims look at others."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        if limit < 1:
            raise ValueError("the history cache holds at least one session")
        self.limit = limit
        self._order: OrderedDict[str, Releasable] = OrderedDict()

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, key: object) -> bool:
        return key in self._order

    def used(self, session: Releasable) -> None:
        """`session` was just used (or loaded its history): it is the most recent; then
        the oldest sessions past the bound give their histories back if idle."""
        self._order[session.key] = session
        self._order.move_to_end(session.key)
        self._trim()

    def forget(self, key: str) -> None:
        """The session's actor is gone (`SessionManager.drop_idle`): hold it no more."""
        self._order.pop(key, None)

    def _trim(self) -> None:
        """Look at the oldest sessions past the bound, at most TRIM_STEP of them: each use
        adds at most one, so the cache still comes back to its bound as sessions idle."""
        excess = len(self._order) - self.limit
        if excess <= 0:
            return
        for key in list(islice(self._order, min(excess, TRIM_STEP))):
            if self._order[key].release_history():
                del self._order[key]
            else:
                self._order.move_to_end(key)
