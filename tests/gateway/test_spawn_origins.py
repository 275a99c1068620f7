"""Where running sub-agents come from (gateway/spawn_origins.py): a sub-agent asks in its
parent's conversation, a sub-agent's sub-agent in the first parent's, and a finished one
is forgotten."""

from __future__ import annotations

from gsv_core.agent.tools import ToolCallContext
from gsv_core.gateway.spawn_origins import SpawnOrigins

GROUP = {"channel": "test", "accountId": "default", "peer": {"kind": "group", "id": "g1"}}


def called_from(session_key: str, channel_context: dict[str, object] | None) -> ToolCallContext:
    return ToolCallContext(session_key, "main", "run", "call", channel_context=channel_context)


def test_a_sub_agents_sub_agent_asks_in_the_first_parents_conversation() -> None:
    """The child of a child inherits the root conversation and its chat, with its own
    task; each is forgotten when it ends."""
    origins = SpawnOrigins()
    with origins.spawned("agent:main:spawn:a", called_from("agent:main:g1", GROUP), "outer"):
        with origins.spawned("agent:main:spawn:b", called_from("agent:main:spawn:a", None),
                             "inner\n  task"):  # fmt: skip
            inner = origins.of("agent:main:spawn:b")
            assert inner is not None
            assert (inner.session_key, inner.channel_context) == ("agent:main:g1", GROUP)
            assert inner.describe() == "Asked by a sub-agent working on: inner task"
        assert origins.of("agent:main:spawn:b") is None
        assert origins.of("agent:main:spawn:a") is not None
    assert origins.of("agent:main:spawn:a") is None
    assert origins.of("agent:main:g1") is None  # a conversation has no origin


def test_a_long_task_is_cut_to_one_short_line() -> None:
    """The prompt names the task briefly: one line, at most 80 characters."""
    origins = SpawnOrigins()
    with origins.spawned("agent:main:spawn:a", called_from("agent:main:main", None), "x" * 500):
        origin = origins.of("agent:main:spawn:a")
        assert origin is not None and len(origin.task) == 80 and origin.task.endswith("…")
