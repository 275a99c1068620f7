"""Fixtures for the node tool tests: a workspace in tmp_path, toolsets, events, polling."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gsv_core.errors import ToolFailed
from gsv_core.node.tools import Toolset
from gsv_core.node.tools import build_toolset
from tests.waiting import until

HAS_RG = shutil.which("rg") is not None
# Grep's two backends; the `grep` fixture runs a test with each
BACKENDS = [
    pytest.param(False, id="python"),
    pytest.param(True, id="rg", marks=pytest.mark.skipif(not HAS_RG, reason="rg not on PATH")),
]


class FakeClock:
    """Epoch milliseconds that move only when a test says so."""

    def __init__(self, start: int = 1_700_000_000_000) -> None:
        self.now = start

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def events() -> list[dict[str, Any]]:
    return []


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def toolset(workspace: Path, events: list[dict[str, Any]]) -> AsyncIterator[Toolset]:
    tools = build_toolset(workspace, on_exec_event=events.append)
    yield tools
    await tools.close()


@pytest.fixture(params=BACKENDS)
async def grep(request: pytest.FixtureRequest, workspace: Path) -> AsyncIterator[Toolset]:
    """A toolset whose Grep uses one backend (each test runs with both, unless it
    parametrizes `grep` indirectly with False for Python only)."""
    tools = build_toolset(workspace, use_rg=request.param)
    yield tools
    await tools.close()


@pytest.fixture
async def restricted(workspace: Path) -> AsyncIterator[Toolset]:
    tools = build_toolset(workspace, restrict_to_workspace=True)
    yield tools
    await tools.close()


@pytest.fixture
async def clocked(
    workspace: Path, events: list[dict[str, Any]], clock: FakeClock
) -> AsyncIterator[Toolset]:
    tools = build_toolset(workspace, on_exec_event=events.append, clock=clock)
    yield tools
    await tools.close()


eventually = until  # the name these tests wait with


async def failure(tools: Toolset, name: str, args: Any) -> str:
    """The ToolFailed message of a call that must fail."""
    with pytest.raises(ToolFailed) as caught:
        await tools.invoke(name, args)
    return caught.value.message


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie waiting to be reaped counts as gone)."""
    stat = Path(f"/proc/{pid}/stat")
    if Path("/proc/self/stat").exists():
        try:
            return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except (FileNotFoundError, ProcessLookupError):
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
