"""MCP tool names as the model sees them: `mcp_<server>__<tool>`, at most 64 characters of
[A-Za-z0-9_-]; anything else is not offered."""

from __future__ import annotations

import pytest

from gsv_core.mcp.names import is_mcp_name
from gsv_core.mcp.names import offered_name
from gsv_core.mcp.names import split_name


def test_a_tool_is_offered_under_its_servers_prefix_and_splits_back() -> None:
    name = offered_name("git-hub", "list_issues")
    assert name == "mcp_git-hub__list_issues"
    assert is_mcp_name(name) and split_name(name) == ("git-hub", "list_issues")
    # a tool's own "__" stays in the tool part: server names never hold one
    assert split_name("mcp_a_b__x__y") == ("a_b", "x__y")


@pytest.mark.parametrize("tool", ["has.dot", "has space", "ünïcode", "", "x" * 53])
def test_names_a_model_cannot_take_are_not_offered(tool: str) -> None:
    assert offered_name("server", tool) is None


def test_the_longest_name_that_fits_is_offered() -> None:
    tool = "x" * (64 - len("mcp_server__"))
    assert offered_name("server", tool) == f"mcp_server__{tool}"


@pytest.mark.parametrize("name", ["gsv__ConfigGet", "laptop__Bash", "mcp_x", "mcp___x", "mcp_x__"])
def test_other_names_are_not_mcp_tools(name: str) -> None:
    assert split_name(name) is None
