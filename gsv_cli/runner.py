"""The single `asyncio.run()` call site and the CLI's exit codes.

* success -> 0; GsvError -> red message on stderr, exit 1;
* the gateway cannot be reached -> one line saying how to start it, exit 3;
* Ctrl-C -> 130. Usage errors stay typer's (exit 2).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from collections.abc import Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING
from typing import Any
from typing import TypeVar

import typer

from gsv_cli.output import print_error

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from gsv_cli.state import CliState
    from gsv_core.client import GatewayClient

T = TypeVar("T")

EXIT_ERROR = 1
EXIT_UNREACHABLE = 3
EXIT_INTERRUPTED = 130


def run(main: Callable[[], Awaitable[T]], *, fast: bool = False) -> T:
    """Run a coroutine for a command, turning failures into messages and exit codes.

    `fast` runs long-lived processes (gateway, node) on uvloop when the `fast` extra is
    installed; short commands keep the stdlib loop (uvloop's import is not worth it there).
    """
    from gsv_core.errors import GatewayUnreachable
    from gsv_core.errors import GsvError

    try:
        with asyncio.Runner(loop_factory=_fast_loop_factory() if fast else None) as runner:
            return runner.run(_as_coroutine(main))
    except GatewayUnreachable as exc:
        # one line: what failed and how to fix it
        print_error(_unreachable(exc.message))
        raise typer.Exit(EXIT_UNREACHABLE) from None
    except GsvError as exc:
        print_error(exc.message)
        raise typer.Exit(EXIT_ERROR) from None
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None


def _unreachable(message: str) -> str:
    if "HTTP 404" in message:  # something answers there, at another path than /ws
        return f"{message}. The gateway's WebSocket path is /ws: check the URL's path."
    return f"{message}. Start it with `gsv gateway run` (or `gsv gateway start`)."


async def _as_coroutine(main: Callable[[], Awaitable[T]]) -> T:
    return await main()


def _fast_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


@asynccontextmanager
async def gateway_client(state: CliState, **kwargs: Any) -> AsyncIterator[GatewayClient]:
    """A connected client for the URL and token the global options resolve to."""
    from gsv_core.client import GatewayClient

    client = GatewayClient(state.url(), token=state.token(), **kwargs)
    await client.connect()
    try:
        yield client
    finally:
        await client.close()


async def _call_once(state: CliState, method: str, params: Any, timeout: float) -> Any:
    async with gateway_client(state) as client:
        return await client.call(method, params, timeout=timeout)


def call_quietly(state: CliState, method: str, params: Any = None, timeout: float = 30.0) -> Any:
    """As `call`, but a failure is raised (GsvError) for the command to handle."""
    return asyncio.run(_call_once(state, method, params, timeout))


def call(state: CliState, method: str, params: Any = None, timeout: float = 30.0) -> Any:
    """Connect, make one call, return its payload (the common shape of admin commands)."""
    return run(lambda: _call_once(state, method, params, timeout))
