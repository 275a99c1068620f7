"""Fixtures for the sandbox tests: real bubblewrap (skipped with the reason where it cannot
run), a node toolset confined by it, and a process outside holding a provider key."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gsv_core.approval.binding import SANDBOX
from gsv_core.node.sandbox import SandboxPolicy
from gsv_core.node.sandbox.bwrap import BwrapSandbox
from gsv_core.node.sandbox.choose import probe_bwrap
from gsv_core.node.sandbox.hidden import hidden_paths
from gsv_core.node.tools import Toolset
from gsv_core.node.tools import build_toolset
from gsv_core.paths import resolve_paths
from tests.agent.conftest import client  # noqa: F401  (gateway runs)
from tests.agent.conftest import fake  # noqa: F401  (gateway runs)
from tests.agent.conftest import gw  # noqa: F401  (gateway runs)
from tests.agent.conftest import log  # noqa: F401  (gateway runs)
from tests.node.tools.conftest import workspace  # noqa: F401  (a workspace in tmp_path)

BWRAP = shutil.which("bwrap")
_PROBLEM = "bubblewrap (bwrap) is not installed" if BWRAP is None else probe_bwrap(BWRAP)
needs_bwrap = pytest.mark.skipif(
    _PROBLEM is not None, reason=f"no working bubblewrap here: {_PROBLEM}"
)
# what the process outside carries and a confined command must never print
PROVIDER_KEY = "sk-ant-SANDBOXTESTKEY"


def policy_for(root: Path, **overrides: Any) -> SandboxPolicy:
    """The policy a node would make for the workspace `root` (hidden paths as on Linux)."""
    hidden = hidden_paths(resolve_paths(), os.path.expanduser("~"), "linux")
    return SandboxPolicy(workspace=str(root), hidden=hidden, **overrides)


@pytest.fixture
async def make_toolset(workspace: Path) -> AsyncIterator[Any]:  # noqa: F811
    """A factory of toolsets confined by bwrap (policy overrides as keyword arguments);
    each is closed (its processes killed) at the end."""
    made: list[Toolset] = []

    def make(**overrides: Any) -> Toolset:
        assert BWRAP is not None
        sandbox = BwrapSandbox(BWRAP, policy_for(workspace, **overrides))
        made.append(build_toolset(workspace, sandbox=sandbox))
        return made[-1]

    yield make
    for tools in made:
        await tools.close()


@pytest.fixture
def confined(make_toolset: Any) -> Toolset:
    tools: Toolset = make_toolset()
    return tools


async def bash(tools: Toolset, command: str, access: str = SANDBOX, **args: Any) -> dict[str, Any]:
    result: dict[str, Any] = await tools.invoke("Bash", {"command": command, **args}, access)
    return result


@dataclass
class Outsider:
    """A process of the machine outside the sandbox, with a provider key in its
    environment and a file open (as the gateway holds its database open)."""

    pid: int
    open_file: Path


@pytest.fixture
def outsider(tmp_path: Path) -> Iterator[Outsider]:
    held = tmp_path / "held-open.db-wal"
    held.write_text("stored conversation: my bank PIN is 4711\n")
    env = {**os.environ, "ANTHROPIC_API_KEY": PROVIDER_KEY}
    code = f"import sys, time; f = open({str(held)!r}); sys.stdout.write('ready\\n'); sys.stdout.flush(); time.sleep(600)"
    process = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE)
    try:
        assert process.stdout is not None and process.stdout.readline() == b"ready\n"
        yield Outsider(process.pid, held)
    finally:
        process.kill()
        process.communicate()
