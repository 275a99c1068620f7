"""The MCP servers of `mcp.servers`, kept running for the gateway's life.

Each enabled server has a keeper task: connect (a stdio server is a child process), list
its tools, wait until the connection is lost, then connect again after a backoff that
doubles up to MAX_DELAY (and starts again from FIRST_DELAY once a connection has lasted
longer than that). A config change restarts exactly the servers whose settings
changed. Tools are offered as `mcp_<server>__<tool>` (gsv_core.mcp.names); whether one
is marked read-only is read from the tool list of the connection running now, so a server
restarted with other annotations is judged by the new ones (docs/mcp.md#approvals).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from pydantic import ValidationError

from gsv_core.config.mcp import McpServerConfig
from gsv_core.errors import GsvError
from gsv_core.errors import NotFound
from gsv_core.errors import Unavailable
from gsv_core.mcp.client import PING_INTERVAL
from gsv_core.mcp.client import McpConnection
from gsv_core.mcp.names import offered_name
from gsv_core.mcp.names import split_name
from gsv_core.providers.base import ToolSpec

log = logging.getLogger(__name__)
HALT_WITHIN = 5.0  # seconds a stopping server is waited for

FIRST_DELAY = 0.5
MAX_DELAY = 30.0
STARTING, READY, RESTARTING, FAILED, DISABLED = (
    "starting", "ready", "restarting", "failed", "disabled",
)  # fmt: skip


@dataclass
class ServerState:
    """One configured server as `mcp.list` shows it."""

    name: str
    settings: McpServerConfig | None  # None: its stored config does not validate
    state: str = STARTING
    last_error: str | None = None
    tools: dict[str, Any] = field(default_factory=dict)  # offered name -> the SDK's Tool
    connection: McpConnection | None = None
    task: asyncio.Task[None] | None = None
    # set when an attempt to connect has ended, either way (mcp.add waits for it)
    attempted: asyncio.Event = field(default_factory=asyncio.Event)


class McpSupervisor:
    def __init__(
        self, servers: Callable[[], dict[str, Any]], ping_interval: float = PING_INTERVAL
    ) -> None:
        self._servers = servers  # the effective `mcp.servers` section
        self._ping_interval = ping_interval
        self._states: dict[str, ServerState] = {}
        self._started = False
        # servers being stopped after a config change (close() waits for them too)
        self._stopping: set[asyncio.Task[None]] = set()

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        self._started = True
        self.reconcile()

    def config_changed(self, path: str) -> None:
        """A config listener: a change under `mcp` restarts the servers it touched."""
        if self._started and (path == "mcp" or path.startswith("mcp.")):
            self.reconcile()

    def reconcile(self) -> None:
        """Start new and changed servers, stop removed and changed ones (nothing before
        `start()` or after `close()`)."""
        if not self._started:
            return
        wanted = {name: _settings(name, raw) for name, raw in self._servers().items()}
        for name in [n for n in self._states if n not in wanted]:
            self._stop(self._states.pop(name))
        for name, settings in wanted.items():
            current = self._states.get(name)
            if current is not None and current.settings == settings and settings is not None:
                continue
            if current is not None:
                self._stop(current)
            self._states[name] = self._begin(name, settings)

    async def close(self) -> None:
        self._started = False
        states, self._states = list(self._states.values()), {}
        await asyncio.gather(*(self._halt(s) for s in states), *self._stopping,
                             return_exceptions=True)  # fmt: skip

    def _begin(self, name: str, settings: McpServerConfig | None) -> ServerState:
        state = ServerState(name, settings)
        if settings is None:
            state.state, state.last_error = FAILED, "its configuration is not valid"
            state.attempted.set()
        elif not settings.enabled:
            state.state = DISABLED
            state.attempted.set()
        else:
            state.task = asyncio.create_task(self._keep(state), name=f"mcp-keeper-{name}")
        return state

    def _stop(self, state: ServerState) -> None:
        task = asyncio.create_task(self._halt(state))
        self._stopping.add(task)
        task.add_done_callback(self._stopping.discard)

    async def _halt(self, state: ServerState) -> None:
        if state.task is not None:
            state.task.cancel()
            # bounded: the SDK's stdio transport waits on a child that may never speak or
            # exit (a program that is no MCP server), and a shutdown must not wait with it
            done, _ = await asyncio.wait({state.task}, timeout=HALT_WITHIN)
            if not done:
                log.warning("MCP server %s did not stop within %g s", state.name, HALT_WITHIN)

    async def _keep(self, state: ServerState) -> None:
        delay = FIRST_DELAY
        assert state.settings is not None
        while True:
            connection = McpConnection(state.name, state.settings, self._ping_interval)
            try:
                await connection.open()
            except GsvError as exc:
                state.state, state.last_error, state.tools = FAILED, exc.message, {}
                log.warning("%s; next try in %.1f s", exc.message, delay)
            else:
                began = asyncio.get_running_loop().time()
                await self._serve(state, connection)
                # a server that dies right after each start keeps backing off
                if asyncio.get_running_loop().time() - began > MAX_DELAY:
                    delay = FIRST_DELAY
            state.attempted.set()
            await asyncio.sleep(delay)
            delay = min(delay * 2, MAX_DELAY)

    async def _serve(self, state: ServerState, connection: McpConnection) -> None:
        """Offer the connection's tools until it ends; the connection is closed either way."""
        try:
            state.connection, state.state = connection, READY
            state.tools = offered_tools(state.name, connection.tools, state.settings)
            log.info("MCP server %s: ready, %d tool(s)", state.name, len(state.tools))
            state.attempted.set()
            await connection.ended.wait()
            state.state, state.tools = RESTARTING, {}
            state.last_error = "the connection was lost"
            log.warning("MCP server %s: connection lost; restarting", state.name)
        finally:
            state.connection = None
            await connection.close()

    # -- queries --------------------------------------------------------------------------
    def states(self) -> list[ServerState]:
        return [self._states[name] for name in sorted(self._states)]

    def state(self, name: str) -> ServerState | None:
        return self._states.get(name)

    async def settle(self, name: str) -> ServerState | None:
        """The server's state once its first attempt to connect has ended."""
        state = self._states.get(name)
        if state is not None and state.settings is not None:
            timeout = state.settings.startTimeoutMs / 1000 + 5
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(state.attempted.wait(), timeout)
        return state

    def specs(self) -> list[ToolSpec]:
        """Every ready server's tools, servers by name, tools as the server lists them."""
        return [
            ToolSpec(name, tool.description or "", tool.input_schema or {"type": "object"})
            for state in self.states()
            for name, tool in state.tools.items()
        ]

    def read_only(self, name: str) -> bool:
        """Whether the running server marks the offered tool `name` read-only (False for
        a tool of a server that is not ready, or that no server offers)."""
        parts = split_name(name)
        state = self._states.get(parts[0]) if parts else None
        tool = state.tools.get(name) if state is not None else None
        return tool is not None and marked_read_only(tool)

    async def test(self, name: str) -> list[tuple[Any, str | None]]:
        """Connect afresh (beside the running connection) and list the tools:
        [(the SDK's Tool, the name it is offered as or None)]."""
        state = self._states.get(name)
        if state is None:
            raise NotFound(f"no MCP server named {name!r}")
        if state.settings is None:
            raise Unavailable(f"MCP server {name}: {state.last_error}")
        connection = McpConnection(name, state.settings)
        await connection.open()
        try:
            offered = {
                id(tool): n
                for n, tool in offered_tools(name, connection.tools, state.settings).items()
            }
            return [(tool, offered.get(id(tool))) for tool in connection.tools]
        finally:
            await connection.close()

    async def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        parts = split_name(name)
        state = self._states.get(parts[0]) if parts else None
        if parts is None or state is None:
            raise NotFound(f"unknown tool: {name}")
        if state.connection is None:
            why = f" ({state.last_error})" if state.last_error else ""
            raise Unavailable(f"MCP server {state.name} is {state.state}{why}")
        if name not in state.tools:
            raise NotFound(f"MCP server {state.name} offers no tool {parts[1]!r}")
        return await state.connection.call(state.tools[name].name, args)


def offered_tools(
    server: str, tools: list[Any], settings: McpServerConfig | None
) -> dict[str, Any]:
    """{offered name: tool} after the allow/deny lists; names a model cannot take are
    skipped with a log line."""
    offered: dict[str, Any] = {}
    for tool in tools:
        if settings is not None and not _allowed(tool.name, settings):
            continue
        name = offered_name(server, tool.name)
        if name is None:
            log.warning("MCP server %s: tool %r skipped: mcp_%s__<tool> must be at most 64 "
                        "characters of A-Z a-z 0-9 _ -", server, tool.name, server)  # fmt: skip
            continue
        offered[name] = tool
    return offered


def marked_read_only(tool: Any) -> bool:
    """The SDK Tool's `readOnlyHint` is true (its other hints do not make it unasked)."""
    annotations = getattr(tool, "annotations", None)
    return annotations is not None and annotations.read_only_hint is True


def _allowed(tool: str, settings: McpServerConfig) -> bool:
    if settings.allowTools is not None and tool not in settings.allowTools:
        return False
    return tool not in settings.denyTools


def _settings(name: str, raw: Any) -> McpServerConfig | None:
    try:
        return McpServerConfig.model_validate(raw)
    except ValidationError as exc:
        # fields and reasons only: the values may hold credentials
        why = "; ".join(f"{'.'.join(map(str, e['loc'])) or name}: {e['msg']}" for e in exc.errors())
        log.error("MCP server %s: configuration not valid, not started: %s", name, why)
        return None
