"""The Bash tool: run a shell command synchronously, in the background, or yield after a wait.

Modes (docs/tools.md): by default the call waits for the command and returns its output;
`background: true` returns a running session at once; `yieldMs` waits up to that long
(clamped to 10..120000 ms) and backgrounds the command if it is still running. Background
sessions are then driven with the Process tool. A synchronous command gets EOF on stdin
(nothing could ever write to it); background and yield modes keep stdin open for Process
write/submit. A non-zero exit is a successful call with status "failed".

Unless the owner granted the call full access, the command runs inside the node's
sandbox (docs/sandbox.md); a confined command that failed for lack of network or of
write access gets a `note` saying so and what would allow it (`unsandboxed`, which asks
the owner).
"""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Any

from pydantic import Field

from gsv_core.approval.binding import FULL
from gsv_core.approval.binding import SANDBOX
from gsv_core.errors import ToolFailed
from gsv_core.node.sandbox.failure import sandbox_note
from gsv_core.node.tools.base import Tool
from gsv_core.node.tools.base import ToolParams
from gsv_core.node.tools.processes import ProcessManager
from gsv_core.node.tools.processes import ProcessSession
from gsv_core.node.tools.workspace import Workspace

DEFAULT_TIMEOUT_MS = 300_000
MIN_YIELD_MS, MAX_YIELD_MS = 10, 120_000


class BashParams(ToolParams):
    command: str = Field(description="Shell command (not empty).")
    workdir: str | None = Field(None, description="Working directory (default: the workspace).")
    timeout: float = Field(
        DEFAULT_TIMEOUT_MS,
        ge=0,
        allow_inf_nan=False,
        description="Milliseconds (0 = none); then SIGTERM, SIGKILL 250 ms later.",
    )
    background: bool = Field(False, description="Return a sessionId at once.")
    yieldMs: float | None = Field(
        None,
        allow_inf_nan=False,
        description="Wait this long (10..120000), then background it if still running.",
    )
    unsandboxed: bool = Field(
        False,
        description="Run outside this node's sandbox (network, writes beyond the "
        "workspace); the owner is asked first. Only after a sandboxed run failed for that.",
    )


class BashTool(Tool[BashParams]):
    name = "Bash"
    capability = "shell.exec"
    description = (
        "Execute a shell command on this node ($SHELL -lc). Waits for it by default and "
        "returns exit code and output (stdout and stderr merged, the last 200,000 "
        "characters). For long-running commands use background or yieldMs, then Process."
    )
    Params = BashParams

    def __init__(self, workspace: Workspace, processes: ProcessManager) -> None:
        self.workspace = workspace
        self.processes = processes

    async def run(self, params: BashParams) -> dict[str, Any]:
        return await self.run_as(params, SANDBOX)

    async def run_as(self, params: BashParams, access: str) -> dict[str, Any]:
        if not params.command.strip():
            raise ToolFailed("command must not be empty")
        workdir = await asyncio.to_thread(self._workdir, params.workdir)
        yield_ms = None
        if params.yieldMs is not None:
            yield_ms = min(max(params.yieldMs, MIN_YIELD_MS), MAX_YIELD_MS)
        session = await self._spawn(
            params,
            workdir,
            keep_stdin=params.background or yield_ms is not None,
            confined=access != FULL,
        )
        if params.background:
            self.processes.background(session)
            return session.running_result()
        await self._wait(session, None if yield_ms is None else yield_ms / 1000)
        if session.running:
            self.processes.background(session)
            return session.running_result()
        return self._completed(session)

    def _completed(self, session: ProcessSession) -> dict[str, Any]:
        """The completed result, with a note when the sandbox is what made it fail."""
        result = session.completed_result()
        policy = self.processes.sandbox.policy
        if session.confined and session.status == "failed" and policy is not None:
            note = sandbox_note(result["output"], policy)
            if note is not None:
                result["note"] = note
        return result

    def _workdir(self, requested: str | None) -> str:
        workdir = self.workspace.resolve(requested)
        if not os.path.exists(workdir):
            raise ToolFailed(f"workdir does not exist: '{workdir}'")
        if not os.path.isdir(workdir):
            raise ToolFailed(f"workdir is not a directory: '{workdir}'")
        return workdir

    async def _spawn(
        self, params: BashParams, workdir: str, *, keep_stdin: bool, confined: bool
    ) -> ProcessSession:
        try:
            return await self.processes.spawn(
                params.command,
                workdir=workdir,
                timeout_ms=int(params.timeout),
                keep_stdin=keep_stdin,
                confined=confined,
            )
        except OSError as exc:
            raise ToolFailed(f"Failed to start command: {exc.strerror or exc}") from None

    @staticmethod
    async def _wait(session: ProcessSession, limit: float | None) -> None:
        """Wait for the exit (or `limit` seconds); a cancelled call kills the command."""
        try:
            async with asyncio.timeout(limit):
                await session.finished.wait()
        except TimeoutError:
            pass
        except asyncio.CancelledError:
            session.signal_group(signal.SIGKILL)
            raise
