"""Toolset: definitions and capabilities for the handshake; invoke turns failures into ToolFailed."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any
from typing import ClassVar

import pytest
from pydantic import Field

from gsv_core.errors import ToolFailed
from gsv_core.node.tools import Toolset
from gsv_core.node.tools.base import LATER
from gsv_core.node.tools.base import Tool
from gsv_core.node.tools.base import ToolParams
from gsv_core.node.tools.read import INLINE_READ_BYTES
from gsv_core.node.tools.read import ReadParams
from gsv_core.node.tools.read import ReadTool
from gsv_core.node.tools.workspace import Workspace
from gsv_core.protocol.schemas.connect import ToolDefinition
from tests.node.tools.conftest import failure

SEED_PARAMS = {
    "Bash": ({"command"}, {"command", "workdir", "timeout", "background", "yieldMs"}),
    "Process": ({"action"}, {"action", "sessionId", "data", "offset", "limit"}),
    "Read": ({"path"}, {"path", "offset", "limit"}),
    "Write": ({"path", "content"}, {"path", "content"}),
    "Edit": ({"path", "oldString", "newString"}, {"path", "oldString", "newString", "replaceAll"}),
    "Glob": ({"pattern"}, {"pattern", "path"}),
    "Grep": ({"pattern"}, {"pattern", "path", "include"}),
}
# gsv's optional additions to the seed's params (docs/tools.md): Bash's request to run
# outside the node's sandbox (docs/sandbox.md)
ADDITIONS = {"Bash": {"unsandboxed"}}


async def test_definitions_follow_seed_002(toolset: Toolset) -> None:
    """Seven tools, each with a description and a JSON schema of exactly the seed's params
    and gsv's documented optional additions."""
    definitions = toolset.definitions()
    assert [d["name"] for d in definitions] == list(SEED_PARAMS)
    for definition in definitions:
        ToolDefinition.model_validate(definition)
        schema = definition["inputSchema"]
        required, allowed = SEED_PARAMS[definition["name"]]
        assert schema["type"] == "object"
        assert set(schema["required"]) == required
        assert set(schema["properties"]) == allowed | ADDITIONS.get(definition["name"], set())
        assert schema["additionalProperties"] is False
        assert definition["description"]
        for prop in schema["properties"].values():
            assert "title" not in prop and "anyOf" not in prop
            assert prop["type"] in ("string", "number", "integer", "boolean")
            assert prop["description"]


async def test_capabilities_follow_the_seed_mapping(toolset: Toolset) -> None:
    """Each tool reports the seed's single capability; the host reports their sorted union."""
    assert toolset.tool_capabilities() == {
        "Bash": ["shell.exec"],
        "Process": ["shell.exec"],
        "Read": ["filesystem.read"],
        "Write": ["filesystem.write"],
        "Edit": ["filesystem.edit"],
        "Glob": ["filesystem.list"],
        "Grep": ["text.search"],
    }
    assert toolset.host_capabilities() == [
        "filesystem.edit",
        "filesystem.list",
        "filesystem.read",
        "filesystem.write",
        "shell.exec",
        "text.search",
    ]


async def test_unknown_tool_is_not_found(toolset: Toolset) -> None:
    """An unknown bare name fails with the original's message."""
    assert await failure(toolset, "Nope", {}) == "Tool not found: Nope"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([1, 2], "Invalid arguments: expected a JSON object, got list"),
        ("path", "Invalid arguments: expected a JSON object, got str"),
        (None, "Invalid arguments: 'path' is required"),
        ({"path": 3}, "Invalid arguments: 'path': Input should be a valid string"),
        (
            {"path": "a", "offset": -2, "extra": 1},
            "Invalid arguments: 'offset' must be >= 0 (got -2); unknown field 'extra'",
        ),
    ],
)
async def test_bad_arguments_name_every_problem(toolset: Toolset, args: Any, message: str) -> None:
    """Arguments that are not an object or break the schema fail with every problem named."""
    assert await failure(toolset, "Read", args) == message


async def test_null_means_absent(toolset: Toolset, workspace: Path) -> None:
    """An explicit null takes the default for options and counts as missing for required fields."""
    (workspace / "a.txt").write_text("x\n")
    result = await toolset.invoke("Read", {"path": "a.txt", "offset": None, "limit": None})
    assert result["content"] == "1\tx"
    assert await failure(toolset, "Read", {"path": None}) == "Invalid arguments: 'path' is required"


class _BrokenParams(ToolParams):
    value: int = Field(0, description="anything")


class _BrokenTool(Tool[_BrokenParams]):
    name: ClassVar[str] = "Broken"
    description: ClassVar[str] = "always raises"
    capability: ClassVar[str] = "test.broken"
    Params = _BrokenParams

    async def run(self, params: _BrokenParams) -> Any:
        raise KeyError("secret internals")


class _BrokenNowTool(_BrokenTool):
    name: ClassVar[str] = "BrokenNow"

    def run_now(self, params: _BrokenParams) -> Any:
        raise KeyError("secret internals")


@pytest.mark.parametrize("tool", [_BrokenTool(), _BrokenNowTool()])
async def test_unexpected_exceptions_become_short_tool_errors(
    caplog: pytest.LogCaptureFixture, tool: Tool[Any]
) -> None:
    """A bug in a tool, in `run()` or in `run_now()`, is a ToolFailed without internals;
    the traceback goes to the log."""
    toolset = Toolset([tool])
    with caplog.at_level(logging.ERROR), pytest.raises(ToolFailed) as caught:
        await toolset.invoke(tool.name, {})
    assert caught.value.message == f"{tool.name} failed: internal error (KeyError)"
    assert "secret internals" not in caught.value.message
    assert "secret internals" in caplog.text
    await toolset.close()


async def test_read_answers_at_once_only_for_a_small_file(
    toolset: Toolset, workspace: Path
) -> None:
    """Read's `run_now` reads a small file on the spot, with the result `invoke()` gives;
    a large or missing file is LATER (the worker thread reads or reports it)."""
    (workspace / "small.txt").write_text("one\n")
    (workspace / "large.txt").write_text("x\n" * INLINE_READ_BYTES)
    read = ReadTool(Workspace(workspace, restrict=False))
    small = read.run_now(ReadParams(path="small.txt"))
    assert small == await toolset.invoke("Read", {"path": "small.txt"})
    assert read.run_now(ReadParams(path="large.txt", limit=2)) is LATER
    assert read.run_now(ReadParams(path="missing.txt")) is LATER
    large = await toolset.invoke("Read", {"path": "large.txt", "limit": 2})
    assert large["content"] == "1\tx\n2\tx"


async def test_tool_failed_is_a_500_tool_error(toolset: Toolset, workspace: Path) -> None:
    """Tool errors are ToolFailed, whose wire shape carries the tool's own message."""
    with pytest.raises(ToolFailed) as caught:
        await toolset.invoke("Read", {"path": "missing"})
    shape = caught.value.to_error_shape()
    assert shape == {
        "code": 500,
        "message": f"Failed to read '{workspace / 'missing'}': No such file or directory",
    }
