"""Inline directives (the original's commands.test directive cases)."""

from __future__ import annotations

import pytest

from gsv_core.agent.directives import Directives
from gsv_core.agent.directives import directive_ack
from gsv_core.agent.directives import is_directive_only
from gsv_core.agent.directives import parse_directives
from gsv_core.agent.levels import MODEL_SELECTOR_HELP
from gsv_core.agent.levels import ModelRef


@pytest.mark.parametrize(
    ("text", "cleaned", "level"),
    [
        ("Hello /think:high", "Hello", "high"),
        ("/think:high Hello", "Hello", "high"),
        ("/t:medium What's 2+2?", "What's 2+2?", "medium"),
        ("/t:low What's 2+2?", "What's 2+2?", "low"),
        ("/thinking:minimal go", "go", "minimal"),
        ("before /T:HIGH after", "before after", "high"),
        ("/t:off x", "x", "none"),
        ("/t:none x", "x", "none"),
        ("/t:0 x", "x", "none"),
        ("/t:min x", "x", "minimal"),
        ("/t:1 x", "x", "minimal"),
        ("/t:2 x", "x", "low"),
        ("/t:med x", "x", "medium"),
        ("/t:3 x", "x", "medium"),
        ("/t:4 x", "x", "high"),
        ("/t:xhigh x", "x", "xhigh"),
        ("/t:max x", "x", "xhigh"),
        ("/t:5 x", "x", "xhigh"),
    ],
)
def test_think_directive_sets_level_and_is_removed(text: str, cleaned: str, level: str) -> None:
    """/think:, /thinking: and /t: set the level for the message, at the start or the end."""
    directives = parse_directives(text)
    assert (directives.cleaned, directives.think_level, directives.had_any) == (
        cleaned,
        level,
        True,
    )


def test_invalid_think_value_is_removed_silently() -> None:
    """An unknown level is dropped from the text and sets nothing."""
    directives = parse_directives("/t:banana hello")
    assert directives == Directives(cleaned="hello", had_any=True)
    assert directive_ack(directives) is None


@pytest.mark.parametrize(
    "text",
    [
        "hello/think:high",
        "path/t:low",
        "email me at a/m:b",
        "/thinkhigh",
        "/t:",
        "/mo:x",
        "/statuses",
    ],
)
def test_tokens_inside_words_are_not_directives(text: str) -> None:
    """Directives must start at the beginning or after whitespace and end at whitespace."""
    assert parse_directives(text) == Directives(cleaned=text)


def test_directive_value_runs_to_whitespace() -> None:
    """`/think:high!` is a think directive whose value "high!" is no level."""
    assert parse_directives("/think:high! go") == Directives(cleaned="go", had_any=True)


def test_think_and_model_directives_together() -> None:
    """A think and a model directive in one message are both taken and both removed."""
    directives = parse_directives("/t:high explain this /m:openai/gpt-4o please")
    assert directives == Directives(
        cleaned="explain this please",
        think_level="high",
        model=ModelRef("openai", "gpt-4o"),
        had_any=True,
    )


@pytest.mark.parametrize(
    ("text", "model"),
    [
        ("/model:anthropic/claude-opus-4 hi", ModelRef("anthropic", "claude-opus-4")),
        ("/m:OpenRouter/anthropic/claude-3.5 hi", ModelRef("openrouter", "anthropic/claude-3.5")),
        ("hi /M:openai/gpt-4o", ModelRef("openai", "gpt-4o")),
        ("/m:openrouter/x:free hi", ModelRef("openrouter", "x:free")),
    ],
)
def test_model_directive_with_provider(text: str, model: ModelRef) -> None:
    """provider/model values (the id may hold more slashes) give the per-message model."""
    directives = parse_directives(text)
    assert (directives.model, directives.cleaned, directives.invalid_model_raw) == (
        model,
        "hi",
        None,
    )


def test_bare_model_id_uses_the_fallback_provider() -> None:
    """A bare id lands on the fallback provider."""
    directives = parse_directives("/m:gpt-4o hi", "OpenAI")
    assert directives.model == ModelRef("openai", "gpt-4o")
    assert not directives.needs_fallback_provider


def test_bare_model_id_without_fallback_asks_for_one() -> None:
    """Without a fallback a bare id is invalid, and the caller is told to re-parse (6.1)."""
    directives = parse_directives("/m:gpt-4o hi")
    assert directives.model is None
    assert directives.invalid_model_raw == "gpt-4o"
    assert directives.needs_fallback_provider
    assert directives.cleaned == "hi"
    reparsed = parse_directives("/m:gpt-4o hi", "anthropic")
    assert reparsed.model == ModelRef("anthropic", "gpt-4o")


def test_malformed_provider_selector_is_invalid_for_good() -> None:
    """`/m:openai/` is invalid and re-parsing with a provider would not help."""
    directives = parse_directives("/m:openai/ hi", "anthropic")
    assert directives.invalid_model_raw == "openai/"
    assert not directives.needs_fallback_provider


def test_only_the_first_directive_of_each_kind_counts() -> None:
    """A second think directive is left in the text untouched."""
    directives = parse_directives("/t:high a /t:low b")
    assert directives.think_level == "high"
    assert directives.cleaned == "a /t:low b"


def test_status_directive_is_stripped() -> None:
    """/status inside a message is removed and flagged, with no other effect."""
    directives = parse_directives("what now /status")
    assert directives == Directives(cleaned="what now", has_status=True, had_any=True)


def test_bare_directive_words_without_value_are_removed() -> None:
    """`/think` or `/m` without a value inside a message are removed and set nothing."""
    directives = parse_directives("hello /think there /m")
    assert directives == Directives(cleaned="hello there", had_any=True)


def test_message_without_directives_is_unchanged() -> None:
    """A message with no directive comes back trimmed, its inner layout intact."""
    text = "  def f():\n    return 1  \n"
    assert parse_directives(text) == Directives(cleaned="def f():\n    return 1")


def test_removal_keeps_line_breaks_and_indentation() -> None:
    """Only the spaces around a removed directive collapse; newlines elsewhere survive."""
    text = "/t:high fix this:\n\n    x  =  1\nthanks /m:openai/gpt-4o\nbye"
    directives = parse_directives(text)
    assert directives.cleaned == "fix this:\n\n    x  =  1\nthanks\nbye"


def test_directive_alone_on_a_line_leaves_the_lines_around_it() -> None:
    """A directive on its own line disappears without joining its neighbours."""
    assert parse_directives("first\n/t:high\nsecond").cleaned == "first\n\nsecond"


# --------------------------------------------------------------------------- directive-only


@pytest.mark.parametrize(
    ("text", "only"),
    [
        ("/t:high", True),
        ("  /t:high   /m:openai/gpt-4o  ", True),
        ("/m:nope", True),
        ("/t:high hi", False),
        ("hello", False),
        ("", False),
    ],
)
def test_directive_only_messages(text: str, only: bool) -> None:
    """A message of directives and nothing else is directive-only."""
    assert is_directive_only(parse_directives(text)) is only


@pytest.mark.parametrize(
    ("text", "ack"),
    [
        ("/t:high", "_Thinking: high_"),
        ("/m:openai/gpt-4o", "_Model: openai/gpt-4o_"),
        ("/t:low /m:openai/gpt-4o", "_Thinking: low | Model: openai/gpt-4o_"),
        ("/m:gpt-4o", f"_Invalid model selector: gpt-4o ({MODEL_SELECTOR_HELP})_"),
        ("/t:max /m:a/", f"_Thinking: xhigh | Invalid model selector: a/ ({MODEL_SELECTOR_HELP})_"),
        ("/t:bogus", None),
        ("/status", None),
    ],
)
def test_directive_acknowledgements(text: str, ack: str | None) -> None:
    """The ack joins `Thinking: x`, `Model: p/id` or the invalid selector with " | "."""
    assert directive_ack(parse_directives(text)) == ack


def test_directives_result_shape() -> None:
    """chat.send carries `directives` with thinkLevel and model only when either is set."""
    both = parse_directives("/t:high /m:openai/gpt-4o hi")
    assert both.to_result() == {
        "thinkLevel": "high",
        "model": {"provider": "openai", "id": "gpt-4o"},
    }
    assert parse_directives("/status hi").to_result() is None
