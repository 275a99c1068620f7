"""A value computed from each message of a history, kept while the message stays in it.

Every model call passes the whole history again, and stored messages are never changed
in place (a change replaces the list or the message), so a value computed from a message
holds for as long as that message is passed: it is computed once, not per call.

Most calls pass the last call's messages again with new ones after them (the history
grew): that is checked by one list comparison, done in C (identity first, so only a
message rebuilt with the same content is compared by content, and then its value, a
function of that content, still holds), and only the new messages are computed. Any
other change (a compaction, a reset, a reload) finds the values it can keep by object.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Hashable
from collections.abc import Iterable
from typing import Any
from typing import Generic
from typing import TypeVar

T = TypeVar("T")

_NONE: Any = object()  # the inputs before the first call: equal to none given


class PerMessage(Generic[T]):
    def __init__(self) -> None:
        # the last call's messages (a copy: the caller's list may grow), values, inputs
        self._messages: list[Any] = []
        self._values: list[T] = []
        self._inputs: Hashable = _NONE

    def each(
        self, messages: Iterable[Any], compute: Callable[[Any], T], inputs: Hashable = None
    ) -> list[T]:
        """`compute(message)` of each message, kept from the last call if its `inputs`
        were the same; values of messages no longer passed in are dropped."""
        passed = list(messages)
        done = len(self._messages)
        same_inputs = inputs == self._inputs
        if same_inputs and passed[:done] == self._messages:
            values = self._values + [compute(message) for message in passed[done:]]
        else:
            values = self._by_object(passed, compute, same_inputs)
        self._messages, self._values, self._inputs = passed, values, inputs
        return values

    def _by_object(
        self, passed: list[Any], compute: Callable[[Any], T], same_inputs: bool
    ) -> list[T]:
        """The values of a history that changed other than by growing: the part that
        still starts it alike is kept as it is, later messages by object."""
        if not same_inputs:
            return [compute(message) for message in passed]
        start = 0
        for before, now in zip(self._messages, passed, strict=False):  # either may be longer
            if before is not now and before != now:
                break
            start += 1
        # the message itself is held beside its value: its id cannot be another's
        known = {id(m): (m, v) for m, v in zip(self._messages, self._values, strict=True)}
        values = self._values[:start]
        for message in passed[start:]:
            entry = known.get(id(message))
            values.append(
                entry[1] if entry is not None and entry[0] is message else compute(message)
            )
        return values

    def forget(self) -> None:
        """Drop every value (the history was released)."""
        self._messages, self._values, self._inputs = [], [], _NONE
