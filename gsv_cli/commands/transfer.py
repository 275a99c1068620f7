"""`gsv transfer SOURCE DESTINATION`: copy a file between nodes and the workspace
(`nodeId:/path` or `gsv:workspace/path`), with a progress bar (bytes, rate, ETA)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING
from typing import Annotated
from typing import Any

import typer

from gsv_cli import output
from gsv_cli.options import JsonOpt
from gsv_cli.state import CliState

if TYPE_CHECKING:
    from gsv_core.client import GatewayClient


def transfer(
    ctx: typer.Context,
    source: Annotated[str, typer.Argument(help="nodeId:/path or gsv:workspace/path")],
    destination: Annotated[str, typer.Argument(help="nodeId:/path or gsv:workspace/path")],
    agent: Annotated[str | None, typer.Option("--agent", help="Workspace of this agent.")] = None,
    json_output: JsonOpt = False,
) -> None:
    """Copy a file; the command ends when the copy is complete and verified."""
    from gsv_cli.runner import run

    state: CliState = ctx.obj
    params: dict[str, Any] = {"source": source, "destination": destination}
    if agent:
        params["agentId"] = agent
    as_json = state.wants_json(json_output)
    result = run(
        lambda: _transfer(state, params, show_progress=not as_json and sys.stderr.isatty())
    )
    if as_json:
        output.print_json(result)
    else:
        output.write_text(
            f"copied {result['bytesTransferred']} bytes: {result['source']} -> "
            f"{result['destination']} (sha256 {result['sha256'][:12]}…)\n"
        )


async def _transfer(state: CliState, params: dict[str, Any], show_progress: bool) -> Any:
    from gsv_cli.runner import gateway_client
    from gsv_core.protocol.methods import TRANSFER_REQUEST

    async with gateway_client(state) as client:
        if not show_progress:
            return await client.call(TRANSFER_REQUEST, params, timeout=None)
        return await _with_progress(client, params, TRANSFER_REQUEST)


async def _with_progress(client: GatewayClient, params: dict[str, Any], method: str) -> Any:
    import asyncio

    from rich.progress import BarColumn
    from rich.progress import DownloadColumn
    from rich.progress import Progress
    from rich.progress import TimeRemainingColumn
    from rich.progress import TransferSpeedColumn

    from gsv_core.protocol.events import TRANSFER_PROGRESS

    columns = (BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=output.err(), transient=True) as bar:
        task = bar.add_task("transfer", total=None)

        async def follow() -> None:
            async for frame in client.events():
                if frame.event == TRANSFER_PROGRESS and isinstance(frame.payload, dict):
                    bar.update(task, completed=frame.payload["bytes"], total=frame.payload["size"])

        watcher = asyncio.create_task(follow())
        try:
            return await client.call(method, params, timeout=None)
        finally:
            watcher.cancel()
