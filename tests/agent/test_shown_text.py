"""ShownText: a step answered again shows each word once."""

from __future__ import annotations

from gsv_core.agent.shown_text import Shown
from gsv_core.agent.shown_text import ShownText


def test_a_retry_repeating_the_shown_words_shows_only_what_is_new() -> None:
    """After a restart, text the chat already has is held back; the rest flows on."""
    shown = ShownText()
    assert [shown.add("The "), shown.add("answer")] == [Shown("The "), Shown("answer")]
    shown.restart()
    assert [shown.add("The ans"), shown.add("wer is"), shown.add(" 42.")] == [
        None,
        Shown(" is"),
        Shown(" 42."),
    ]
    assert shown.finish() is None


def test_a_retry_saying_something_else_replaces_the_text() -> None:
    """A retry that diverges replaces the shown text once, then appends as usual."""
    shown = ShownText()
    shown.add("Forty two")
    shown.restart()
    assert [shown.add("It is "), shown.add("42.")] == [Shown("It is ", replace=True), Shown("42.")]


def test_a_shorter_retry_replaces_the_longer_text_at_the_end() -> None:
    """A retry that ends before repeating everything shown replaces it at the step's end."""
    shown = ShownText()
    shown.add("Hello there, friend")
    shown.restart()
    assert shown.add("Hello there") is None
    assert shown.finish() == Shown("Hello there", replace=True)


def test_text_that_was_a_tool_call_is_retracted_once() -> None:
    """A reply found to be a call written as text: the chat drops what it showed of the
    step (an empty `replace`), and nothing more at the step's end."""
    shown = ShownText()
    assert shown.add('{"name": "echo", ') == Shown('{"name": "echo", ')
    shown.add('"arguments": {}}')
    assert shown.retract() == Shown("", replace=True)
    assert shown.finish() is None
    assert ShownText().retract() is None  # nothing shown: nothing to drop
