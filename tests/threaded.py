"""A real gateway running in a background thread, for tests that drive it synchronously
(CLI commands that call asyncio.run themselves, hypothesis examples)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve


@contextmanager
def threaded_gateway(database: Path, **config: object) -> Iterator[RunningGateway]:
    started = threading.Event()
    holder: dict[str, object] = {}
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()

    async def main() -> None:
        try:
            async with serve(ServerConfig(database=database, **config), port=0) as running:  # type: ignore[arg-type]
                holder["running"] = running
                started.set()
                await stop.wait()
        except BaseException as exc:
            holder["error"] = exc
            started.set()

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    if not started.wait(timeout=30):
        raise RuntimeError("gateway thread did not start")
    if "error" in holder:
        raise RuntimeError("gateway failed to start") from holder["error"]  # type: ignore[misc]
    try:
        yield holder["running"]  # type: ignore[misc]
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=30)
        loop.close()


def owner_env(running: RunningGateway) -> dict[str, str]:
    """The environment for a CLI subprocess of this test: it cannot see the in-process
    memory keyring, so the owner token goes in GSV_TOKEN (as a user could pass it)."""
    return {**os.environ, "GSV_TOKEN": running.token}


def wait_for(predicate: Callable[[], object], what: str, seconds: float = 30) -> None:
    """Poll `predicate` until it holds (bounded); fail naming `what` if it never does."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@contextmanager
def node_subprocess(
    running: RunningGateway, workspace: Path, node_id: str = "n1"
) -> Iterator[subprocess.Popen[str]]:
    """`gsv node run --id <node_id>` serving `workspace`, online when this yields; stopped
    with SIGTERM afterwards (continued first, in case a test froze it)."""
    workspace.mkdir(exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gsv_cli", "--url", running.url, "node", "run", "--id", node_id,
         "--workspace", str(workspace)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=owner_env(running),
    )  # fmt: skip
    try:
        wait_for(lambda: node_id in running.gateway.nodes.online_ids(), "the node to connect")
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
