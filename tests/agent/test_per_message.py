"""PerMessage (agent/per_message.py): each message's value is computed once while the
message stays in the history, whether the history grew, was rebuilt or was replaced."""

from __future__ import annotations

from gsv_core.agent.per_message import PerMessage


class Counting:
    """A compute function that records which messages it was asked about."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, message: dict[str, str]) -> str:
        self.asked.append(message["text"])
        return message["text"].upper()


def msgs(*texts: str) -> list[dict[str, str]]:
    return [{"text": text} for text in texts]


def test_a_grown_history_computes_only_the_new_messages() -> None:
    kept, compute = PerMessage[str](), Counting()
    history = msgs("a", "b")
    assert kept.each(history, compute) == ["A", "B"]
    history += msgs("c")  # the caller's own list grows after the call
    assert kept.each(history, compute) == ["A", "B", "C"]
    assert kept.each(history, compute) == ["A", "B", "C"]
    assert compute.asked == ["a", "b", "c"]


def test_a_message_rebuilt_alike_keeps_its_value_and_a_changed_one_is_computed() -> None:
    kept, compute = PerMessage[str](), Counting()
    history = msgs("a", "b", "c")
    kept.each(history, compute)
    rebuilt = [dict(history[0]), *history[1:]]  # a summary's model form, built each turn
    assert kept.each(rebuilt, compute) == ["A", "B", "C"]
    changed = [history[0], {"text": "B2"}, history[2]]
    assert kept.each(changed, compute) == ["A", "B2", "C"]
    assert compute.asked == ["a", "b", "c", "B2"]


def test_a_replaced_history_keeps_the_values_of_the_messages_it_kept() -> None:
    kept, compute = PerMessage[str](), Counting()
    history = msgs("a", "b", "c", "d")
    kept.each(history, compute)
    compacted = [{"text": "summary"}, history[2], history[3]]
    assert kept.each(compacted, compute) == ["SUMMARY", "C", "D"]
    assert compute.asked == ["a", "b", "c", "d", "summary"]
    # a message dropped earlier is computed again should it come back
    assert kept.each([history[0], *compacted], compute) == ["A", "SUMMARY", "C", "D"]
    assert compute.asked[-1] == "a"


def test_other_inputs_compute_everything_again() -> None:
    kept = PerMessage[str]()
    history = msgs("a", "b")
    assert kept.each(history, lambda m: f"{m['text']}:1", inputs=1) == ["a:1", "b:1"]
    assert kept.each(history, lambda m: f"{m['text']}:2", inputs=2) == ["a:2", "b:2"]
    assert kept.each(history + msgs("c"), lambda m: f"{m['text']}:2", inputs=2) == [
        "a:2",
        "b:2",
        "c:2",
    ]


def test_a_shorter_history_and_forget() -> None:
    kept, compute = PerMessage[str](), Counting()
    history = msgs("a", "b", "c")
    kept.each(history, compute)
    assert kept.each(history[:1], compute) == ["A"]  # a reset that kept one message
    assert kept.each([], compute) == []
    kept.forget()
    assert kept.each(history[:1], compute) == ["A"]
    assert compute.asked == ["a", "b", "c", "a"]
