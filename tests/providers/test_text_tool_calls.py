"""Tool calls written as text (gsv_core/providers/text_tool_calls.py): a reply is a call
only when the whole of it is one JSON call of an offered tool with an object of
arguments; prose, examples, several calls, unknown tools and broken JSON are text."""

from __future__ import annotations

from typing import Any

import pytest

from gsv_core.providers.base import ToolSpec
from gsv_core.providers.text_tool_calls import TextToolCall
from gsv_core.providers.text_tool_calls import call_text
from gsv_core.providers.text_tool_calls import catalogue
from gsv_core.providers.text_tool_calls import parse_text_tool_call
from gsv_core.providers.text_tool_calls import result_text

OFFERED = {"gsv__ReadFile", "n1__Bash", "echo"}
READ = TextToolCall("gsv__ReadFile", {"path": "a.txt"})
CALL = '{"name": "gsv__ReadFile", "arguments": {"path": "a.txt"}}'

ACCEPTED: list[tuple[str, str, TextToolCall]] = [
    ("the bare object", CALL, READ),
    ("with spaces and newlines around it", f"\n\n  {CALL}\n \t", READ),
    ("compact", '{"name":"gsv__ReadFile","arguments":{"path":"a.txt"}}', READ),
    ("keys the other way round", '{"arguments": {"path": "a.txt"}, "name": "gsv__ReadFile"}', READ),
    (
        "pretty-printed",
        '{\n  "name": "gsv__ReadFile",\n  "arguments": {\n    "path": "a.txt"\n  }\n}',
        READ,
    ),
    ("in a json fence", f"```json\n{CALL}\n```", READ),
    ("in a JSON fence", f"```JSON\n{CALL}\n```", READ),
    ("in a bare fence", f"```\n{CALL}\n```", READ),
    ("in a fence with blank space around", f"  \n```json\n\n{CALL}\n\n```\n", READ),
    ("empty arguments", '{"name": "echo", "arguments": {}}', TextToolCall("echo", {})),
    (
        "nested arguments",
        '{"name": "n1__Bash", "arguments": {"command": "ls", "env": {"A": [1, 2]}}}',
        TextToolCall("n1__Bash", {"command": "ls", "env": {"A": [1, 2]}}),
    ),
    (
        "a code fence inside a string argument",
        '{"name": "echo", "arguments": {"text": "```py\\nprint(1)\\n```"}}',
        TextToolCall("echo", {"text": "```py\nprint(1)\n```"}),
    ),
    (
        "unicode arguments",
        '{"name": "echo", "arguments": {"text": "h\\u00e9 \u2603"}}',
        TextToolCall("echo", {"text": "hé ☃"}),
    ),
    (
        "braces inside a string",
        '{"name": "echo", "arguments": {"text": "} {"}}',
        TextToolCall("echo", {"text": "} {"}),
    ),
]

REFUSED: list[tuple[str, str]] = [
    ("empty", ""),
    ("only spaces", "   \n"),
    ("plain prose", "The file says hello."),
    ("prose before the call", f"Sure! {CALL}"),
    ("prose after the call", f"{CALL} Let me know if that helps."),
    ("a quoted example inside prose", f"To read a file I would answer `{CALL}` but I will not."),
    (
        "an example in a fence among prose",
        f"For example:\n```json\n{CALL}\n```\nThat is the format.",
    ),
    ("prose after a fenced call", f"```json\n{CALL}\n```\nDone."),
    ("two fenced calls", f"```json\n{CALL}\n```\n```json\n{CALL}\n```"),
    ("an unclosed fence", f"```json\n{CALL}"),
    ("a fence that never opens", f"{CALL}\n```"),
    ("a fence of another language", f"```python\n{CALL}\n```"),
    ("two calls one after the other", f"{CALL}\n{CALL}"),
    ("two calls in an array", f"[{CALL}, {CALL}]"),
    ("one call in an array", f"[{CALL}]"),
    ("an unknown tool", '{"name": "rm_rf", "arguments": {}}'),
    ("an offered name in other case", '{"name": "GSV__READFILE", "arguments": {"path": "a"}}'),
    ("a name with spaces around it", '{"name": " echo ", "arguments": {}}'),
    ("a name that is not text", '{"name": ["echo"], "arguments": {}}'),
    ("a null name", '{"name": null, "arguments": {}}'),
    ("arguments as a JSON string", '{"name": "echo", "arguments": "{\\"text\\": \\"hi\\"}"}'),
    ("arguments as a list", '{"name": "echo", "arguments": ["hi"]}'),
    ("arguments null", '{"name": "echo", "arguments": null}'),
    ("no arguments", '{"name": "echo"}'),
    ("parameters instead of arguments", '{"name": "echo", "parameters": {}}'),
    ("an extra key", '{"name": "echo", "arguments": {}, "id": "1"}'),
    (
        "OpenAI's function shape",
        '{"type": "function", "function": {"name": "echo", "arguments": {}}}',
    ),
    ("the name given twice", '{"name": "echo", "name": "n1__Bash", "arguments": {}}'),
    ("a key given twice deep inside", '{"name": "echo", "arguments": {"a": 1, "a": 2}}'),
    ("NaN in the arguments", '{"name": "echo", "arguments": {"n": NaN}}'),
    ("Infinity in the arguments", '{"name": "echo", "arguments": {"n": -Infinity}}'),
    ("single quotes", "{'name': 'echo', 'arguments': {}}"),
    ("a trailing comma", '{"name": "echo", "arguments": {},}'),
    ("cut short", '{"name": "echo", "arguments": {"text": "hi"'),
    ("a comment", '{"name": "echo", // the tool\n "arguments": {}}'),
    (
        "nesting too deep to parse",
        '{"name": "echo", "arguments": ' + '{"a": ' * 100_000 + "1" + "}" * 100_001,
    ),
    ("a JSON string", f'"{CALL}"'),
    ("a JSON number", "42"),
    ("XML-ish tool tags", f"<tool_call>{CALL}</tool_call>"),
]


@pytest.mark.parametrize(("case", "reply", "call"), ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_a_whole_reply_that_is_one_call_is_a_call(
    case: str, reply: str, call: TextToolCall
) -> None:
    """Each of these replies is exactly one call of an offered tool."""
    assert parse_text_tool_call(reply, OFFERED) == call


@pytest.mark.parametrize(("case", "reply"), REFUSED, ids=[c[0] for c in REFUSED])
def test_anything_else_stays_text(case: str, reply: str) -> None:
    """Each of these replies is text, never a call."""
    assert parse_text_tool_call(reply, OFFERED) is None


def test_no_offered_tools_means_no_calls() -> None:
    """A request that offered no tools (a compaction summary) never turns into a call."""
    assert parse_text_tool_call(CALL, set()) is None


@pytest.mark.parametrize("arguments", [{}, {"path": "a b/ü.txt", "n": [1, {"x": None}]}])
def test_a_call_written_back_reads_as_the_same_call(arguments: dict[str, Any]) -> None:
    """What the history shows of a call parses back to that call."""
    written = call_text("gsv__ReadFile", arguments)
    assert parse_text_tool_call(written, OFFERED) == TextToolCall("gsv__ReadFile", arguments)


def test_the_catalogue_names_each_tool_its_schema_and_the_answer_shape() -> None:
    """The system prompt's section lists names, descriptions and schemas, and the shape."""
    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    text = catalogue([ToolSpec("gsv__ReadFile", "Read a file.", schema),
                      ToolSpec("echo", "Say it back.", {"type": "object"})])  # fmt: skip
    assert '{"name": "<tool name>", "arguments": {' in text
    assert (
        '- gsv__ReadFile: Read a file.\n  arguments schema: {"type":"object","properties":'
        '{"path":{"type":"string"}},"required":["path"]}' in text
    )
    assert '- echo: Say it back.\n  arguments schema: {"type":"object"}' in text


def test_a_result_says_which_tool_and_whether_it_failed() -> None:
    """Results go back as text naming the tool; a failure says so; empty output is said."""
    assert result_text("echo", "hi", is_error=False) == "[tool result] echo returned:\nhi"
    assert result_text("echo", "boom", is_error=True) == "[tool result] echo failed:\nboom"
    assert result_text("echo", "", is_error=False).endswith("(no output)")
