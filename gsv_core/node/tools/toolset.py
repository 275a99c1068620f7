"""The Toolset: the node tools by name, as the daemon advertises and invokes them.

`invoke()` is the one place a tool's exception becomes the caller's error: ToolFailed
passes through with its message, anything unexpected is logged with its traceback and
reported as a short ToolFailed, so a tool bug never takes the node down. A tool that can
answer without blocking (`Tool.run_now`: a small Read) skips the worker thread, which
bench/tool_roundtrip.py shows as about a fifth of a node tool call.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from gsv_core.approval.binding import SANDBOX
from gsv_core.errors import ToolFailed
from gsv_core.node.sandbox.base import Sandbox
from gsv_core.node.sandbox.none import NoSandbox
from gsv_core.node.tools.base import LATER
from gsv_core.node.tools.base import Tool
from gsv_core.node.tools.processes import ProcessManager

log = logging.getLogger(__name__)


class Toolset:
    """A fixed set of tools plus the background processes they own."""

    def __init__(self, tools: Sequence[Tool[Any]], processes: ProcessManager | None = None) -> None:
        self._tools = {tool.name: tool for tool in tools}
        self._processes = processes

    @property
    def sandbox(self) -> Sandbox:
        """The sandbox its commands run in (none without a process manager)."""
        if self._processes is None:
            return NoSandbox("this node runs no commands")
        return self._processes.sandbox

    def definitions(self) -> list[dict[str, Any]]:
        """`[{name, description, inputSchema}]` for the connect handshake."""
        return [tool.definition() for tool in self._tools.values()]

    def tool_capabilities(self) -> dict[str, list[str]]:
        """Tool name -> capability ids (the capability column of docs/tools.md)."""
        return {tool.name: [tool.capability] for tool in self._tools.values()}

    def host_capabilities(self) -> list[str]:
        return sorted({tool.capability for tool in self._tools.values()})

    async def invoke(self, name: str, args: Any, access: str = SANDBOX) -> Any:
        """Run a tool by its bare name with the access the guard granted (the sandbox by
        default); every failure is raised as ToolFailed."""
        tool = self._tools.get(name)
        if tool is None:
            raise ToolFailed(f"Tool not found: {name}")
        params = tool.parse(args)
        try:
            result = tool.run_now(params)
        except Exception as exc:
            raise _as_tool_failure(name, exc) from None
        if result is not LATER:
            return result
        return await self._run(tool, params, access)

    async def _run(self, tool: Tool[Any], params: Any, access: str) -> Any:
        try:
            return await tool.run_as(params, access)
        except Exception as exc:
            raise _as_tool_failure(tool.name, exc) from None

    async def close(self) -> None:
        """Kill the process groups of background commands and end the tools' own
        processes; the toolset is done."""
        if self._processes is not None:
            await self._processes.close()
        for tool in self._tools.values():
            await tool.close()


def _as_tool_failure(name: str, exc: Exception) -> ToolFailed:
    if isinstance(exc, ToolFailed):
        return exc
    log.error("tool %s failed unexpectedly", name, exc_info=exc)
    return ToolFailed(f"{name} failed: internal error ({type(exc).__name__})")
