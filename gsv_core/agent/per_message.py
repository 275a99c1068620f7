"""A value computed from each message of a history, kept while the message stays in it.

Every model call passes the whole history again, and stored messages are never changed
in place (a change replaces the list or the message), so a value computed from a message
object holds for as long as that object is passed: it is computed once, not per call.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Hashable
from collections.abc import Iterable
from typing import Any
from typing import Generic
from typing import TypeVar

T = TypeVar("T")


class PerMessage(Generic[T]):
    def __init__(self) -> None:
        # id(message) -> (the message, the inputs besides it, the value); holding the
        # message keeps its id from being reused by another object while the entry exists
        self._known: dict[int, tuple[Any, Hashable, T]] = {}

    def each(
        self, messages: Iterable[Any], compute: Callable[[Any], T], inputs: Hashable = None
    ) -> list[T]:
        """`compute(message)` of each message, kept from earlier calls with the same
        `inputs`; entries of messages no longer passed in are dropped."""
        known = self._known
        kept: dict[int, tuple[Any, Hashable, T]] = {}
        values: list[T] = []
        for message in messages:
            entry = known.get(id(message))
            if entry is None or entry[0] is not message or entry[1] != inputs:
                entry = (message, inputs, compute(message))
            kept[id(message)] = entry
            values.append(entry[2])
        self._known = kept
        return values

    def forget(self) -> None:
        """Drop every entry (the history was released)."""
        self._known = {}
