"""The history's token estimate kept between model calls (agent/token_estimates.py) is
always the sum `compaction.estimate_tokens` gives, whatever happened to the history."""

from __future__ import annotations

from typing import Any

from gsv_core.agent.compaction import estimate_tokens
from gsv_core.agent.token_estimates import TokenEstimates
from gsv_core.protocol.messages import user_message


def history(count: int, word: str = "hello") -> list[dict[str, Any]]:
    return [{**user_message(f"{word} {i}", 1_700_000_000_000)} for i in range(count)]


def full(messages: list[dict[str, Any]]) -> int:
    return sum(estimate_tokens(m) for m in messages)


def test_the_total_is_the_full_estimate_as_the_history_grows() -> None:
    """Appended messages are added; the earlier ones are not estimated again."""
    kept, messages = TokenEstimates(), history(3)
    assert kept.total(messages) == full(messages)
    messages.append({**user_message("a much longer message " * 20, 1)})
    assert kept.total(messages) == full(messages)


def test_a_replaced_history_is_estimated_afresh() -> None:
    """After a compaction or reset (a new list of new messages) nothing old is counted."""
    kept = TokenEstimates()
    assert kept.total(history(50)) == full(history(50))
    short = history(2, word="x" * 400)
    assert kept.total(short) == full(short)
    kept.forget()
    assert kept.total(short) == full(short)


def test_an_equal_but_new_message_object_is_estimated_itself() -> None:
    """Entries are by object: a new message in place of an old one is estimated anew."""
    kept, messages = TokenEstimates(), history(3)
    kept.total(messages)
    messages[1] = {**messages[1], "content": "y" * 4000}
    assert kept.total(messages) == full(messages)
