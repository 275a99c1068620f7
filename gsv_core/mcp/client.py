"""One live session with one MCP server over the SDK's public client API
(`mcp.ClientSession` over `stdio_client` or `streamable_http_client`).

The SDK's transports are async context managers that must be entered and left in one
task, so each connection runs in a task of its own that holds them open until the
connection is closed or lost; calls from any task go through its session.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
from collections.abc import AsyncIterator
from typing import Any

from gsv_core.config.mcp import McpServerConfig
from gsv_core.errors import TimedOut
from gsv_core.errors import ToolFailed
from gsv_core.errors import Unavailable
from gsv_core.extras import missing_extra
from gsv_core.mcp.results import tool_result
from gsv_core.mcp.stderr_log import stderr_to_log

log = logging.getLogger(__name__)
# a live connection is pinged this often: a server that died between calls is noticed
# (and restarted) without waiting for the next call to fail
PING_INTERVAL = 30.0


def sdk_missing() -> str | None:
    """What to install when the MCP SDK is missing (None when it is there)."""
    if importlib.util.find_spec("mcp") is None:
        return missing_extra("mcp", ModuleNotFoundError("No module named 'mcp'", name="mcp"))
    return None


class McpConnection:
    def __init__(
        self, name: str, settings: McpServerConfig, ping_interval: float = PING_INTERVAL
    ) -> None:
        self.name = name
        self.settings = settings
        self.ping_interval = ping_interval
        self.tools: list[Any] = []  # the SDK's Tool objects, as listed at connect
        self.ended = asyncio.Event()  # the connection is over (closed or lost)
        self._stop = asyncio.Event()
        self._session: Any = None
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task: asyncio.Task[None] | None = None

    @property
    def timeout(self) -> float:
        """One call's deadline (and a ping's), in seconds."""
        return self.settings.timeoutMs / 1000

    @property
    def start_timeout(self) -> float:
        """The deadline to start, shake hands and list the tools, in seconds."""
        return self.settings.startTimeoutMs / 1000

    async def open(self) -> None:
        """Connect, initialise and list the tools; raises Unavailable or TimedOut."""
        self._task = asyncio.create_task(self._run(), name=f"mcp-{self.name}")
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), self.start_timeout)
        except TimeoutError:
            await self.close()
            raise TimedOut(
                f"MCP server {self.name} did not answer within {self.start_timeout:g} seconds"
            ) from None
        except BaseException:
            await self.close()
            raise

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        """Run one tool; its result as tool result blocks (gsv_core.mcp.results)."""
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED
        from mcp.types import REQUEST_TIMEOUT

        if self._session is None or self.ended.is_set():
            raise Unavailable(f"MCP server {self.name} is not connected")
        try:
            result = await asyncio.wait_for(
                self._session.call_tool(tool, args, read_timeout_seconds=self.timeout),
                self.timeout + 1,  # the SDK's own deadline answers first
            )
        except (TimeoutError, MCPError) as exc:
            if isinstance(exc, TimeoutError) or exc.code == REQUEST_TIMEOUT:
                raise TimedOut(
                    f"MCP server {self.name}: {tool} timed out after {self.timeout:g} seconds"
                ) from None
            if exc.code == CONNECTION_CLOSED:
                self._stop.set()  # the supervisor sees `ended` and starts it again
                raise ToolFailed(
                    f"MCP server {self.name} closed the connection during {tool} "
                    "(it is being restarted)"
                ) from None
            raise ToolFailed(f"MCP server {self.name}: {exc.message}") from None
        except Exception as exc:  # the transport's own errors (an HTTP server gone)
            self._stop.set()
            raise ToolFailed(f"MCP server {self.name}: {tool} failed: {_describe(exc)}") from None
        return tool_result(result)

    async def close(self) -> None:
        self._stop.set()
        if self._task is not None and not self._ready.done():
            # still connecting: nothing checks _stop before the handshake is done, and a
            # server that never answers `initialize` would hold this close for ever
            self._task.cancel()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        try:
            async with self._connected() as session:
                self._session = session
                self._ready.set_result(None)
                await self._watch(session)
        except ModuleNotFoundError as exc:
            self._fail(Unavailable(missing_extra("mcp", exc)))
        except Exception as exc:  # the SDK's and the OS's errors alike: reported, not raised
            log.debug("MCP server %s: connection ended", self.name, exc_info=True)
            self._fail(Unavailable(f"MCP server {self.name}: {_describe(exc)}"))
        finally:
            self._session = None
            self.ended.set()

    async def _watch(self, session: Any) -> None:
        """Until closed: a ping every ping_interval; one unanswered ends the connection."""
        while True:
            try:
                await asyncio.wait_for(self._stop.wait(), self.ping_interval)
                return
            except TimeoutError:
                pass
            try:
                await asyncio.wait_for(session.send_ping(), self.timeout)
            except Exception as exc:  # closed, timed out: either way it is gone
                log.warning("MCP server %s: no answer to a ping (%s)", self.name, _describe(exc))
                return

    def _fail(self, error: Exception) -> None:
        if not self._ready.done():
            self._ready.set_exception(error)

    @contextlib.asynccontextmanager
    async def _connected(self) -> AsyncIterator[Any]:
        from mcp import ClientSession

        async with contextlib.AsyncExitStack() as stack:
            read, write = await stack.enter_async_context(self._transport(stack))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            self.tools = await _all_tools(session)
            yield session

    def _transport(self, stack: contextlib.AsyncExitStack) -> Any:
        settings = self.settings
        if settings.url is not None:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            # the SDK's own defaults: a server may hold its event stream open and quiet
            # for minutes (a call's deadline is the session's read timeout, not this)
            timeout = httpx2.Timeout(30.0, read=max(300.0, self.timeout))
            http = httpx2.AsyncClient(headers=settings.headers, timeout=timeout)
            stack.push_async_callback(http.aclose)
            return streamable_http_client(settings.url, http_client=http)
        from mcp.client.stdio import StdioServerParameters
        from mcp.client.stdio import stdio_client

        errlog = stderr_to_log(self.name)
        stack.callback(errlog.close)
        command = settings.command or ""
        server = StdioServerParameters(
            command=command, args=settings.args, env=settings.env or None, cwd=settings.cwd
        )
        return stdio_client(server, errlog=errlog)


async def _all_tools(session: Any) -> list[Any]:
    from mcp.types import PaginatedRequestParams

    listed = await session.list_tools()
    tools = list(listed.tools)
    while listed.next_cursor:
        listed = await session.list_tools(params=PaginatedRequestParams(cursor=listed.next_cursor))
        tools.extend(listed.tools)
    return tools


def _describe(exc: BaseException) -> str:
    """One line for `gsv mcp list`: the innermost error of an exception group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return str(exc) or type(exc).__name__
