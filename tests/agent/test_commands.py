"""Slash commands, think levels and model selectors (the original's
commands.test), and the exact texts the commands answer with."""

from __future__ import annotations

import pytest

from gsv_core.agent.commands import COMMANDS
from gsv_core.agent.commands import HELP_TEXT
from gsv_core.agent.commands import CommandError
from gsv_core.agent.commands import ParsedCommand
from gsv_core.agent.commands import SessionStatus
from gsv_core.agent.commands import format_command_failure
from gsv_core.agent.commands import format_compact
from gsv_core.agent.commands import format_current_model
from gsv_core.agent.commands import format_current_think
from gsv_core.agent.commands import format_model_set
from gsv_core.agent.commands import format_reset
from gsv_core.agent.commands import format_status
from gsv_core.agent.commands import format_stop
from gsv_core.agent.commands import format_think_set
from gsv_core.agent.commands import parse_command
from gsv_core.agent.commands import parse_compact_count
from gsv_core.agent.commands import parse_model_arg
from gsv_core.agent.commands import parse_think_arg
from gsv_core.agent.levels import MODEL_SELECTOR_HELP
from gsv_core.agent.levels import THINK_LEVELS
from gsv_core.agent.levels import ModelRef
from gsv_core.agent.levels import normalize_think_level
from gsv_core.agent.levels import parse_model_selector

# --------------------------------------------------------------------------- think levels


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("off", "none"),
        ("none", "none"),
        ("0", "none"),
        ("minimal", "minimal"),
        ("min", "minimal"),
        ("1", "minimal"),
        ("low", "low"),
        ("2", "low"),
        ("medium", "medium"),
        ("med", "medium"),
        ("3", "medium"),
        ("high", "high"),
        ("4", "high"),
        ("xhigh", "xhigh"),
        ("max", "xhigh"),
        ("5", "xhigh"),
        ("HIGH", "high"),
        ("  Med  ", "medium"),
        ("invalid", None),
        ("6", None),
        ("", None),
        (None, None),
        ("hi", None),
    ],
)
def test_think_levels_normalise(raw: str | None, expected: str | None) -> None:
    """off/none/0 -> none ... xhigh/max/5 -> xhigh; anything else is invalid."""
    assert normalize_think_level(raw) == expected


def test_think_levels_are_the_wire_values() -> None:
    """The normalised levels are exactly the wire's thinkingLevel values."""
    assert THINK_LEVELS == ("none", "minimal", "low", "medium", "high", "xhigh")


# --------------------------------------------------------------------------- model selectors


@pytest.mark.parametrize(
    ("raw", "fallback", "expected"),
    [
        ("anthropic/claude-sonnet-4", None, ModelRef("anthropic", "claude-sonnet-4")),
        ("OpenAI/GPT-4o", None, ModelRef("openai", "GPT-4o")),
        ("openrouter/anthropic/claude-3", None, ModelRef("openrouter", "anthropic/claude-3")),
        ("gpt-4o", "openai", ModelRef("openai", "gpt-4o")),
        ("gpt-4o", " OpenAI ", ModelRef("openai", "gpt-4o")),
        ("  gpt-4o  ", "openai", ModelRef("openai", "gpt-4o")),
        ("gpt-4o", None, None),
        ("gpt-4o", "", None),
        ("gpt 4o", "openai", None),
        ("openai/gpt 4o", None, None),
        ("", "openai", None),
        ("/gpt-4o", "openai", None),
        ("openai/", None, None),
    ],
)
def test_model_selectors_parse(raw: str, fallback: str | None, expected: ModelRef | None) -> None:
    """provider/id (provider lowercased), bare id with fallback; no fallback or spaces fail."""
    assert parse_model_selector(raw, fallback) == expected


def test_model_ref_prints_as_provider_slash_id() -> None:
    """A ModelRef reads back as the selector users type."""
    assert str(ModelRef("openrouter", "anthropic/claude-3")) == "openrouter/anthropic/claude-3"


# --------------------------------------------------------------------------- parse_command


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/think", ParsedCommand("think", "", "/think")),
        ("/think high", ParsedCommand("think", "high", "/think high")),
        ("  /think   high  ", ParsedCommand("think", "high", "/think   high")),
        ("/thinking low", ParsedCommand("think", "low", "/thinking low")),
        ("/t 3", ParsedCommand("think", "3", "/t 3")),
        ("/new", ParsedCommand("reset", "", "/new")),
        ("/reset", ParsedCommand("reset", "", "/reset")),
        ("/RESET", ParsedCommand("reset", "", "/RESET")),
        ("/compact 5", ParsedCommand("compact", "5", "/compact 5")),
        ("/stop", ParsedCommand("stop", "", "/stop")),
        ("/status", ParsedCommand("status", "", "/status")),
        ("/status please", ParsedCommand("status", "please", "/status please")),
        ("/model", ParsedCommand("model", "", "/model")),
        ("/model openai/gpt-4o", ParsedCommand("model", "openai/gpt-4o", "/model openai/gpt-4o")),
        ("/help", ParsedCommand("help", "", "/help")),
    ],
)
def test_whole_message_commands_parse(text: str, expected: ParsedCommand) -> None:
    """A whole trimmed `/word [args]` message with a known word is a command; aliases map."""
    assert parse_command(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "/unknowncommand",
        "/unknown with args",
        "/?",
        "hello /think high",
        "/think:high",
        "/t:low What's 2+2?",
        "/think\nhigh",
        "/think high\nand more",
        "/compact\r\n5",
        "/help\u2028more",
        "/",
        "",
        "think high",
        "/héllo",
    ],
)
def test_other_messages_are_not_commands(text: str) -> None:
    """Unknown words, directives, multi-line and non-slash messages are not commands."""
    assert parse_command(text) is None


def test_command_metadata_covers_every_spelling() -> None:
    """COMMANDS lists each command once and every spelling parse_command accepts."""
    names = [info.name for info in COMMANDS]
    commands = ["reset", "compact", "stop", "status", "usage", "budget", "model", "think", "help"]
    assert names == commands
    for info in COMMANDS:
        for spelling in info.spellings:
            parsed = parse_command(f"/{spelling}")
            assert parsed is not None and parsed.name == info.name
    spellings = {s for info in COMMANDS for s in info.spellings}
    assert spellings == {*commands, "new", "thinking", "t"}


# --------------------------------------------------------------------------- responses


def test_help_lists_commands_and_directives() -> None:
    """/help names every command and the inline directives."""
    for word in ("/new", "/reset", "/compact", "/stop", "/status", "/model", "/think", "/help"):
        assert f"`{word}" in HELP_TEXT
    for directive in ("/think:", "/t:", "/model:", "/m:"):
        assert directive in HELP_TEXT


def test_reset_and_compact_texts() -> None:
    """Reset and compact answer with the original's sentences."""
    assert format_reset(12) == "Session reset. Archived 12 messages."
    assert format_compact(20, 7) == "Compacted session. Kept 20 messages, archived 7."


@pytest.mark.parametrize(("args", "expected"), [("", 20), ("  ", 20), ("5", 5), (" 1 ", 1)])
def test_compact_count_parses(args: str, expected: int) -> None:
    """/compact keeps 20 by default, else the given positive integer."""
    assert parse_compact_count(args) == expected


@pytest.mark.parametrize("args", ["0", "-3", "abc", "5abc", "2.5", "5 10", "١٢"])
def test_bad_compact_count_is_refused(args: str) -> None:
    """Non-integers and counts below 1 give the usage error."""
    with pytest.raises(CommandError) as caught:
        parse_compact_count(args)
    assert caught.value.message == "Invalid count. Usage: /compact [N]"
    assert caught.value.code == 400


@pytest.mark.parametrize(
    ("run_id", "cancelled", "channel", "expected"),
    [
        (None, 0, False, "No run in progress."),
        (None, 0, True, "No run in progress."),
        ("r1", 0, False, "Stopped run r1."),
        ("r1", 2, False, "Stopped run r1, cancelled 2 pending tool(s)."),
        ("r1", 0, True, "Stopped run `r1`."),
        ("r1", 1, True, "Stopped run `r1`, cancelled 1 pending tool(s)."),
    ],
)
def test_stop_texts(run_id: str | None, cancelled: int, channel: bool, expected: str) -> None:
    """/stop reports the stopped run and cancelled tools; channels quote the run id."""
    assert format_stop(run_id, cancelled, channel=channel) == expected


STATUS = SessionStatus(
    session_key="agent:main:main",
    message_count=4,
    input_tokens=120,
    output_tokens=30,
    model=ModelRef("openai", "gpt-4o"),
)


def test_status_text_shows_effective_model() -> None:
    """/status lists key, messages, tokens and the model it was given, not the global one."""
    assert format_status(STATUS) == (
        "Session: agent:main:main\nMessages: 4\nTokens: 120 in / 30 out\nModel: openai/gpt-4o"
    )


def test_status_text_with_thinking_and_reset() -> None:
    """Thinking level and reset mode lines appear when set."""
    status = SessionStatus(**{**STATUS.__dict__, "thinking_level": "high", "reset_mode": "daily"})
    assert format_status(status).splitlines()[-2:] == ["Thinking: high", "Reset: daily"]


def test_status_channel_variant() -> None:
    """Channels get a bold header and bullet lines."""
    assert format_status(STATUS, channel=True) == (
        "**Session Status**\n"
        "• Session: agent:main:main\n"
        "• Messages: 4\n"
        "• Tokens: 120 in / 30 out\n"
        "• Model: openai/gpt-4o"
    )


def test_model_command_texts() -> None:
    """/model shows the current model with help, and confirms a new one."""
    current = ModelRef("anthropic", "claude-sonnet-4")
    assert format_current_model(current) == (
        "Current model: anthropic/claude-sonnet-4\n"
        "Use provider/model-id, or model-id to keep the current provider."
    )
    assert format_model_set(ModelRef("openai", "gpt-4o")) == "Model set to openai/gpt-4o"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ("openai/gpt-4o", ModelRef("openai", "gpt-4o")),
        ("claude-opus-4", ModelRef("anthropic", "claude-opus-4")),
    ],
)
def test_model_arg_keeps_current_provider_for_bare_ids(args: str, expected: ModelRef) -> None:
    """A bare id stays on the current model's provider."""
    assert parse_model_arg(args, ModelRef("anthropic", "claude-sonnet-4")) == expected


@pytest.mark.parametrize("args", ["two words", "/x", "openai/"])
def test_bad_model_arg_is_refused_with_help(args: str) -> None:
    """An invalid selector gives "Invalid model selector: ..." followed by the help line."""
    with pytest.raises(CommandError) as caught:
        parse_model_arg(args, ModelRef("anthropic", "claude-sonnet-4"))
    assert caught.value.message == f"Invalid model selector: {args}\n{MODEL_SELECTOR_HELP}"


def test_think_command_texts() -> None:
    """/think shows the level (off when unset) with the levels line, and confirms changes."""
    levels = "Levels: off, minimal, low, medium, high, xhigh"
    assert format_current_think(None) == f"Thinking level: off\n{levels}"
    assert format_current_think("high") == f"Thinking level: high\n{levels}"
    assert format_think_set("medium") == "Thinking level set to medium"


def test_think_arg_normalises_or_refuses() -> None:
    """/think LEVEL normalises the level; an unknown one gives the error with the levels."""
    assert parse_think_arg("max") == "xhigh"
    with pytest.raises(CommandError) as caught:
        parse_think_arg("ultra")
    assert caught.value.message == (
        "Invalid level: ultra\nLevels: off, minimal, low, medium, high, xhigh"
    )


def test_command_failure_text() -> None:
    """An unexpected failure is reported as "Command failed: ..."."""
    assert format_command_failure(RuntimeError("disk full")) == "Command failed: disk full"
