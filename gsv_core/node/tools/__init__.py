"""The tools a node exposes to the agent: Bash, Process, Read, Write, Edit, Glob, Grep.

    toolset = build_toolset(workspace, restrict_to_workspace=False, on_exec_event=send)
    toolset.definitions()            # for `connect`
    await toolset.invoke("Read", {"path": "README.md"})
    await toolset.close()            # kills background process groups

docs/tools.md lists parameters, results and limits; each tool's module says where it
departs from the original node tools and why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gsv_core.node.sandbox.base import Sandbox
from gsv_core.node.tools.base import Tool
from gsv_core.node.tools.bash import BashTool
from gsv_core.node.tools.edit import EditTool
from gsv_core.node.tools.glob import GlobTool
from gsv_core.node.tools.grep import GrepTool
from gsv_core.node.tools.process import ProcessTool
from gsv_core.node.tools.processes import Clock
from gsv_core.node.tools.processes import ExecEventSink
from gsv_core.node.tools.processes import ProcessManager
from gsv_core.node.tools.processes import epoch_ms
from gsv_core.node.tools.read import ReadTool
from gsv_core.node.tools.toolset import Toolset
from gsv_core.node.tools.workspace import Workspace
from gsv_core.node.tools.write import WriteTool
from gsv_core.workspace.locks import KeyLocks

__all__ = ["Toolset", "build_toolset"]


def build_toolset(
    workspace: Path,
    *,
    restrict_to_workspace: bool = False,
    on_exec_event: ExecEventSink | None = None,
    clock: Clock = epoch_ms,
    use_rg: bool | None = None,
    sandbox: Sandbox | None = None,
) -> Toolset:
    """The seven node tools rooted at `workspace`; Bash's commands run inside `sandbox`
    (none when not given) unless a call was granted full access.

    `on_exec_event` receives `node.exec.event` params (docs/protocol.md#events), without
    callId, when a background command starts or ends; it is called on the event loop.
    `clock` (epoch ms) and `use_rg` exist for tests and benchmarks.
    """
    root = Workspace(workspace, restrict=restrict_to_workspace)
    processes = ProcessManager(on_exec_event=on_exec_event, clock=clock, sandbox=sandbox)
    locks = KeyLocks()
    tools: list[Tool[Any]] = [
        BashTool(root, processes),
        ProcessTool(processes),
        ReadTool(root),
        WriteTool(root, locks),
        EditTool(root, locks),
        GlobTool(root),
        GrepTool(root, use_rg=use_rg),
    ]
    return Toolset(tools, processes)
