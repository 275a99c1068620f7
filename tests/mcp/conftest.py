"""Real MCP servers for the tests (tests/mcp/servers/toy.py, written with the SDK):
stdio configs to hand the gateway, and a streamable HTTP one on 127.0.0.1."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gsv_core.client import GatewayClient
from tests.agent.conftest import client  # noqa: F401  (agent runs)
from tests.agent.conftest import fake  # noqa: F401  (agent runs)
from tests.agent.conftest import gw  # noqa: F401  (agent runs)
from tests.agent.conftest import log  # noqa: F401  (agent runs)

TOY = Path(__file__).parent / "servers" / "toy.py"


def stdio(*flags: str, **settings: Any) -> dict[str, Any]:
    """The `mcp.servers.<name>` config of the toy server over stdio."""
    return {"command": sys.executable, "args": [str(TOY), *flags], **settings}


async def set_rules(connected: GatewayClient, *rules: dict[str, Any]) -> None:
    """The owner's `toolApproval.rules` (they come before the MCP tools' default ask)."""
    await connected.call("config.set", {"path": "toolApproval.rules", "value": list(rules)})


async def eventually(check: Callable[[], bool | Awaitable[bool]], what: str) -> None:
    """Wait for a condition the code reaches on its own (a restart, a log line)."""
    try:
        async with asyncio.timeout(30):
            while True:
                outcome = check()
                if outcome if isinstance(outcome, bool) else await outcome:
                    return
                await asyncio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@dataclass
class HttpServer:
    url: str
    process: subprocess.Popen[bytes]


@pytest.fixture
def http_server() -> Iterator[HttpServer]:
    """The toy server over streamable HTTP on 127.0.0.1."""
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, str(TOY), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(600):  # it binds once its imports are done
            if process.poll() is not None:
                raise AssertionError("the HTTP MCP server exited at start")
            if _accepts(port):
                break
            time.sleep(0.05)
        yield HttpServer(f"http://127.0.0.1:{port}/mcp", process)
    finally:
        process.terminate()
        process.wait(timeout=10)
