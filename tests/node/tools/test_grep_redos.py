"""Grep with a catastrophic regex never freezes the node: the search runs in a child
process, the event loop keeps serving, and a cancel or the deadline kills the child."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gsv_core.errors import ToolFailed
from gsv_core.node.tools.grep import GrepTool
from gsv_core.node.tools.workspace import Workspace
from tests.node.tools.conftest import BACKENDS
from tests.node.tools.conftest import HAS_RG
from tests.node.tools.conftest import alive
from tests.node.tools.conftest import eventually

# Python's `re` needs about 2^N steps to fail on N a's then "!" (seconds at N = 28), and
# holds the GIL throughout; rg cannot run the backreference, so it falls back to Python.
BAD_LINE = "a" * 28 + "!\n"
BACKREFERENCE = r"^(a+)+\1$"


@pytest.fixture(params=BACKENDS)
async def grep_tool(request: pytest.FixtureRequest, workspace: Path) -> AsyncIterator[GrepTool]:
    (workspace / "bad.txt").write_text(BAD_LINE)
    (workspace / "good.txt").write_text("hello\n")
    tool = GrepTool(Workspace(workspace), use_rg=request.param)
    yield tool
    await tool.close()


def bad_patterns(tool: GrepTool) -> list[str]:
    """rg runs `^(a+)+$` itself (in linear time); without rg Python runs every pattern."""
    return [BACKREFERENCE] if tool.rg else [r"^(a+)+$", BACKREFERENCE]


async def grep(tool: GrepTool, **args: str) -> dict[str, object]:
    result: dict[str, object] = await tool.run(tool.parse(args))
    return result


async def test_the_node_answers_other_calls_while_a_catastrophic_grep_runs(
    grep_tool: GrepTool, workspace: Path
) -> None:
    """Another Grep is answered while a catastrophic one runs; cancelling it kills its child."""
    for pattern in bad_patterns(grep_tool):
        bad = asyncio.create_task(grep(grep_tool, pattern=pattern, path="bad.txt"))
        await eventually(lambda: grep_tool.workers.busy)  # the bad search is under way
        other = await grep(grep_tool, pattern="hel+o", path="good.txt")
        assert other["count"] == 1
        assert not bad.done()
        (pid,) = grep_tool.workers.busy
        bad.cancel()
        with pytest.raises(asyncio.CancelledError):
            await bad
        assert not grep_tool.workers.busy
        await eventually(lambda: not alive(pid))  # noqa: B023


@pytest.mark.skipif(not HAS_RG, reason="rg not on PATH")
async def test_rg_candidates_are_rechecked_without_freezing_the_node(workspace: Path) -> None:
    """rg finds the line fast, but Python's re-check backtracks: that too runs in the child."""
    (workspace / "bad.txt").write_text("a" * 28 + "x\n")
    tool = GrepTool(Workspace(workspace), use_rg=True)
    try:
        bad = asyncio.create_task(grep(tool, pattern=r"(a+)+b|x"))
        await eventually(lambda: tool.workers.busy)
        ticks = 0
        while ticks < 20:  # the event loop keeps turning
            await asyncio.sleep(0)
            ticks += 1
        assert not bad.done()
        bad.cancel()
        with pytest.raises(asyncio.CancelledError):
            await bad
    finally:
        await tool.close()


async def test_a_grep_past_its_deadline_fails_and_its_child_is_killed(workspace: Path) -> None:
    """A search that outlives the deadline is a clear error, and its process is gone."""
    (workspace / "bad.txt").write_text("a" * 40 + "!\n")
    tool = GrepTool(Workspace(workspace), use_rg=False, deadline=0.5)
    try:
        bad = asyncio.create_task(grep(tool, pattern=r"^(a+)+$"))
        (pid,) = await eventually(lambda: tool.workers.busy)
        with pytest.raises(ToolFailed, match=r"stopped after 0\.5 s"):
            await bad
        await eventually(lambda: not alive(pid))
    finally:
        await tool.close()


async def test_an_ordinary_grep_reuses_its_child_and_close_ends_it(workspace: Path) -> None:
    """Two searches in a row use one child process; closing the tool ends it."""
    (workspace / "good.txt").write_text("hello\n")
    tool = GrepTool(Workspace(workspace), use_rg=False)
    await grep(tool, pattern="hello")
    (pid,) = tool.workers.idle
    await grep(tool, pattern="hello")
    assert tool.workers.idle == [pid]
    await tool.close()
    assert not tool.workers.idle
    await eventually(lambda: not alive(pid))


async def test_an_idle_child_that_died_is_replaced(workspace: Path) -> None:
    """A kept child killed between calls (the OOM killer, a stray kill) costs nothing but
    a fresh start: the call still answers."""
    (workspace / "good.txt").write_text("hello\n")
    tool = GrepTool(Workspace(workspace), use_rg=False)
    try:
        await grep(tool, pattern="hello")
        (pid,) = tool.workers.idle
        os.kill(pid, signal.SIGKILL)
        await eventually(lambda: not alive(pid))
        assert (await grep(tool, pattern="hello"))["count"] == 1
        assert tool.workers.idle != [pid]
    finally:
        await tool.close()


async def test_a_kept_child_exits_after_a_while_without_work(workspace: Path) -> None:
    """A kept child holds some 30 MB: without a job for `idle_exit` seconds it exits by
    itself, and the next search starts a fresh one."""
    (workspace / "good.txt").write_text("hello\n")
    tool = GrepTool(Workspace(workspace), use_rg=False)
    tool.workers.idle_exit = 1
    try:
        await grep(tool, pattern="hello")
        (pid,) = tool.workers.idle
        await eventually(lambda: not alive(pid))
        assert (await grep(tool, pattern="hello"))["count"] == 1
    finally:
        await tool.close()
