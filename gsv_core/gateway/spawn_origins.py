"""Where each running sub-agent (gsv__Spawn) came from: the conversation whose chat its
approval prompts go to and where a "yes" / "no" answers them (docs/approvals.md).

A sub-agent's run has no channel context of its own (its replies go to the parent, not to
a chat), so the tool router asks here when one of its calls needs a human. A sub-agent of a
sub-agent inherits the first one's conversation: prompts always reach the chat where the
owner talks to the agent.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from gsv_core.agent.tools import ToolCallContext

TASK_CHARS = 80  # of the task, in a prompt: enough to tell two sub-agents apart


@dataclass(frozen=True)
class SpawnOrigin:
    session_key: str  # the conversation's session (approvals are asked and answered there)
    channel_context: dict[str, Any] | None  # its run's channel context (None: a client's)
    task: str  # the sub-agent's task, cut to one short line

    def describe(self) -> str:
        return f"Asked by a sub-agent working on: {self.task}"


class SpawnOrigins:
    def __init__(self) -> None:
        self._by_key: dict[str, SpawnOrigin] = {}

    @contextmanager
    def spawned(self, child_key: str, parent: ToolCallContext, task: str) -> Iterator[None]:
        """While the sub-agent of session `child_key` runs, it is known to come from the
        parent's conversation (or the conversation the parent itself came from)."""
        root = self._by_key.get(parent.session_key)
        self._by_key[child_key] = SpawnOrigin(
            root.session_key if root else parent.session_key,
            root.channel_context if root else parent.channel_context,
            _one_line(task),
        )
        try:
            yield
        finally:
            self._by_key.pop(child_key, None)

    def of(self, session_key: str) -> SpawnOrigin | None:
        """The origin of a running sub-agent's session; None for any other session."""
        return self._by_key.get(session_key)


def _one_line(task: str) -> str:
    """The task on one line: the model wrote it, and it must not pass for the prompt's
    own lines (the command, why it asks)."""
    line = " ".join(task.split())
    return line if len(line) <= TASK_CHARS else line[: TASK_CHARS - 1].rstrip() + "…"
