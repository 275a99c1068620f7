"""Which binaries each node has, as its `node.probe` answers said, and how old that is.

Each answer is kept per node and per binary with the time it was given (the injected
clock). An answer older than the freshness window is still used for eligibility (it is
the best we know) but is asked again on the next refresh. A probe that failed is not
retried automatically until the window has passed, so a broken node is not asked on
every run; `skills.update --force` asks anyway.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field


@dataclass
class NodeBins:
    answers: dict[str, tuple[bool, int]] = field(default_factory=dict)  # bin -> (found, at)
    failed_at: int | None = None
    error: str | None = None

    @property
    def updated_at(self) -> int | None:
        return max((at for _, at in self.answers.values()), default=None)

    def found(self) -> dict[str, bool]:
        return {name: ok for name, (ok, _) in sorted(self.answers.items())}


class BinCache:
    def __init__(self, now_ms: Callable[[], int]) -> None:
        self._now = now_ms
        self._nodes: dict[str, NodeBins] = {}

    def get(self, node_id: str) -> NodeBins:
        return self._nodes.get(node_id) or NodeBins()

    def stale(self, node_id: str, wanted: Iterable[str], max_age_ms: int) -> list[str]:
        """The wanted bins this node has not answered for within `max_age_ms`."""
        entry = self._nodes.get(node_id)
        oldest = self._now() - max_age_ms
        answers = entry.answers if entry else {}

        def is_stale(name: str) -> bool:
            answer = answers.get(name)
            return answer is None or answer[1] < oldest

        return sorted({name for name in wanted if is_stale(name)})

    def failed_recently(self, node_id: str, max_age_ms: int) -> bool:
        entry = self._nodes.get(node_id)
        return bool(entry and entry.failed_at is not None
                    and entry.failed_at >= self._now() - max_age_ms)  # fmt: skip

    def record(self, node_id: str, found: dict[str, bool]) -> None:
        entry = self._nodes.setdefault(node_id, NodeBins())
        now = self._now()
        entry.answers.update({name: (ok, now) for name, ok in found.items()})
        entry.failed_at = entry.error = None

    def record_failure(self, node_id: str, error: str) -> None:
        entry = self._nodes.setdefault(node_id, NodeBins())
        entry.failed_at = self._now()
        entry.error = error
