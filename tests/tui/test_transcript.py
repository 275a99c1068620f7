"""The TUI's plain-data parts: stored messages to display items, tool block texts, slash
command completion, the model setup hint, the status line and session names."""

from __future__ import annotations

from gsv_cli.tui import commands
from gsv_cli.tui import model_setup
from gsv_cli.tui.screens.sessions import new_session_key
from gsv_cli.tui.screens.sessions import preview_lines
from gsv_cli.tui.session_info import next_model
from gsv_cli.tui.session_info import thinking_label
from gsv_cli.tui.transcript import AssistantItem
from gsv_cli.tui.transcript import NoticeItem
from gsv_cli.tui.transcript import ToolItem
from gsv_cli.tui.transcript import ToolView
from gsv_cli.tui.transcript import UserItem
from gsv_cli.tui.transcript import args_summary
from gsv_cli.tui.transcript import history_items
from gsv_cli.tui.transcript import image_note
from gsv_cli.tui.transcript import split_tool
from gsv_cli.tui.widgets.status import Status

HISTORY = [
    {"role": "user", "content": "list files", "timestamp": 1},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hmm"},
            {"type": "text", "text": "Looking."},
            {
                "type": "toolCall",
                "id": "c1",
                "name": "laptop__Bash",
                "arguments": {"command": "ls -la"},
            },
        ],
        "stopReason": "toolUse",
    },
    {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": "laptop__Bash",
        "content": [{"type": "text", "text": "a.txt"}],
        "isError": False,
    },
    {"role": "assistant", "content": [{"type": "text", "text": "One file."}], "stopReason": "stop"},
]


def test_history_becomes_messages_and_settled_tool_blocks() -> None:
    """Stored messages map to user, reply and tool items; results settle their calls;
    thinking is not shown."""
    items = history_items(HISTORY)
    assert [type(i) for i in items] == [UserItem, AssistantItem, ToolItem, AssistantItem]
    tool = items[2]
    assert isinstance(tool, ToolItem)
    assert tool.view.ok is True and tool.view.summary == "a.txt"
    assert tool.view.title() == "Bash · laptop · ls -la"


def test_failed_runs_and_summaries_show_as_notices() -> None:
    """An assistant message that stored an error, and a compaction summary, become notices."""
    items = history_items(
        [
            {"role": "summary", "content": "earlier"},
            {
                "role": "assistant",
                "content": [],
                "stopReason": "error",
                "errorMessage": "The gateway restarted",
            },
        ]
    )
    assert items == [
        NoticeItem("Earlier messages were compacted into a summary."),
        NoticeItem("The gateway restarted", "error"),
    ]


def test_a_result_without_its_call_still_shows() -> None:
    """A tool result whose call was compacted away becomes a block of its own."""
    items = history_items(
        [
            {
                "role": "toolResult",
                "toolCallId": "x",
                "toolName": "gsv__ConfigGet",
                "content": "v",
                "isError": True,
            }
        ]
    )
    assert len(items) == 1 and isinstance(items[0], ToolItem)
    assert items[0].view.ok is False and items[0].view.tool == "ConfigGet"


def test_tool_names_say_where_the_tool_runs() -> None:
    """`node__Tool` runs on that node, `gsv__Tool` on the gateway; odd names stay whole."""
    assert split_tool("node-a__Read") == ("Read", "node-a")
    assert split_tool("gsv__SessionsList") == ("SessionsList", "gateway")
    assert split_tool("plain") == ("plain", "?")


def test_argument_summaries_prefer_the_main_argument_and_stay_short() -> None:
    """The command or path is shown on its own; otherwise key=value pairs, cut with …."""
    assert args_summary({"timeout": 5, "command": "make   test\nnow"}) == "make test now"
    assert args_summary({"a": 1, "b": [1, 2]}) == "a=1, b=[1, 2]"
    assert args_summary({"command": "x" * 100}).endswith("…")
    assert len(args_summary({"command": "x" * 100})) == 48
    assert args_summary({}) == ""


def test_images_are_a_placeholder_with_their_size() -> None:
    """Read's image text becomes `[image name · type · size]`; other text is no image."""
    assert (
        image_note("Image file: a b.png (image/png, 1536 bytes)")
        == "[image a b.png · image/png · 1.5 KB]"
    )
    assert image_note("just text") is None
    view = ToolView("c", "n__Read", {"path": "a.png"})
    view.finish(True, "Image file: a.png (image/png, 10 bytes)", 1234)
    assert view.body() == "path: a.png\n[image a.png · image/png · 10 B]"
    assert view.title() == "Read · n · a.png · 1.2 s"


def test_completion_matches_names_and_aliases_while_one_word_is_typed() -> None:
    """`/th` offers think; `/ne` offers reset by its alias; nothing after a space."""
    assert [s for s, _ in commands.completions("/th")] == ["think"]
    assert [(s, c.name) for s, c in commands.completions("/ne")] == [("new", "reset")]
    assert len(commands.completions("/")) == len(commands.COMMANDS)
    assert commands.completions("/think high") == []
    assert commands.completions("hello") == []


def test_local_commands_are_answered_by_the_tui() -> None:
    """/switch, /rename, /sessions and /quit stay local; other slashes go to the gateway."""
    assert commands.parse_local("/switch agent:main:x") == commands.LocalCommand(
        "switch", "agent:main:x"
    )
    assert commands.parse_local("/EXIT") == commands.LocalCommand("quit", "")
    assert commands.parse_local("/status") is None
    assert commands.parse_local("/rename a\nb") is None
    assert commands.is_command_like(" /status ") and not commands.is_command_like("/a\nb")


def test_the_setup_hint_shows_only_when_no_key_is_configured() -> None:
    """A hosted provider without a key gets the hint; a key, a custom endpoint or a local
    provider does not."""
    assert model_setup.missing_key({}, "anthropic") == "anthropic"
    assert model_setup.missing_key({"apiKeys": {"anthropic": "***"}}, "anthropic") is None
    custom = {"providers": {"openai": {"baseUrl": "http://x"}}}
    assert model_setup.missing_key(custom, "openai") is None
    assert model_setup.missing_key({}, "ollama") is None


def test_setup_errors_are_told_apart_from_passing_failures() -> None:
    """The registry's "not configured" messages show the setup commands; others do not."""
    assert model_setup.is_setup_error(
        "no API key for openai: run gsv config set apiKeys.openai sk-..."
    )
    assert model_setup.is_setup_error('unknown provider "x" (built in: anthropic)')
    assert not model_setup.is_setup_error("rate limited, retry later")
    assert "gsv config set apiKeys.openai sk-..." in model_setup.setup_text(error="x")


def test_the_model_shown_is_the_one_the_gateway_resolved() -> None:
    """`effectiveModel` of session.get; `?` for what is missing; thinking `none` is off."""
    got = {"effectiveModel": {"provider": "openai", "id": "gpt"}, "settings": {}}
    assert next_model(got) == ("openai", "gpt")
    assert next_model({}) == ("?", "?")
    assert thinking_label({"thinkingLevel": "none"}) == "off"
    assert thinking_label({"thinkingLevel": "high"}) == "high"


def test_the_status_line_says_everything_in_two_lines() -> None:
    """Connection, URL, session (with label), model, thinking, tokens and nodes."""
    status = Status(
        url="ws://h/ws",
        connection="connected",
        session="k",
        label="Work",
        model="p/m",
        tokens_in=1500,
        tokens_out=20,
        nodes=1,
    )
    assert (
        status.render()
        == "● connected · ws://h/ws · Work (k)\np/m · think off · tokens 1.5k in/20 out · 1 node"
    )
    assert Status(url="u", connection="reconnecting").render().startswith("◌ reconnecting · u")


def test_new_session_names_become_keys_of_the_current_agent() -> None:
    """`my ideas` in agent ops -> agent:ops:my-ideas; a full key is kept."""
    assert new_session_key("my ideas", "agent:ops:main") == "agent:ops:my-ideas"
    assert new_session_key("agent:main:x", "agent:ops:main") == "agent:main:x"
    assert new_session_key("x", "main") == "agent:main:x"


def test_the_picker_preview_shows_the_last_messages_on_one_line_each() -> None:
    """Who said what, flattened and cut."""
    assert (
        preview_lines(HISTORY)
        == "you: list files\nagent: Looking.\ntool: Bash · laptop · ls -la\nagent: One file."
    )
    assert preview_lines([]) == "(no messages yet)"


def test_every_gateway_command_the_tui_completes_is_one_the_gateway_parses() -> None:
    """The TUI sends its gateway commands as typed: each spelling it completes is parsed by
    the gateway as that command, and none of the TUI's own commands is a gateway command."""
    from gsv_core.agent.commands import parse_command

    for command in commands.GATEWAY_COMMANDS:
        for spelling in command.spellings:
            parsed = parse_command(f"/{spelling}")
            assert parsed is not None, spelling
            assert parsed.name in {command.name, *command.aliases}
    for command in commands.LOCAL_COMMANDS:
        assert all(parse_command(f"/{s}") is None for s in command.spellings)
