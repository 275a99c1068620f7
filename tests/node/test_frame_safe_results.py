"""A node's answer always reaches the gateway: text no frame may carry (NUL, lone
surrogates) is replaced in tool results, and an answer the gateway refuses, or the node
cannot encode, becomes an error answer instead of a call left waiting for its deadline."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from typing import ClassVar
from typing import cast

import pytest

from gsv_core.client import Backoff
from gsv_core.client import GatewayClient
from gsv_core.errors import GsvError
from gsv_core.errors import InvalidParams
from gsv_core.gateway.server import RunningGateway
from gsv_core.node.daemon import NodeDaemon
from gsv_core.node.daemon import NodeSettings
from gsv_core.node.tools import Toolset
from gsv_core.node.tools.base import Tool
from gsv_core.node.tools.base import ToolParams
from tests.node.test_daemon import node_online
from tests.wire import owner_token

# a call left waiting ends with the gateway's "timed out" within the test's time, not
# pytest-timeout's 60 s; not shorter: scanning the 100 000-deep result for bad text takes
# seconds on a loaded machine, and that work is not what is timed here
TOOL_MS = 30_000


@asynccontextmanager
async def node_and_client(
    gateway: RunningGateway, workspace: Path, toolset: Toolset | None = None
) -> AsyncIterator[GatewayClient]:
    """A node "n1" on `workspace` (its default tools unless given) and an owner client."""
    settings = NodeSettings(
        url=gateway.url,
        node_id="n1",
        workspace=workspace,
        owner_token=owner_token(),
        backoff=Backoff(base=0.05, cap=0.2),
    )
    stop = asyncio.Event()
    task = asyncio.create_task(NodeDaemon(settings, toolset).run(stop))
    try:
        async with GatewayClient(gateway.url, token=gateway.token) as client:
            await node_online(gateway)
            await client.call("config.set", {"path": "timeouts.toolMs", "value": TOOL_MS})
            yield client
    finally:
        stop.set()
        await task


async def invoke(client: GatewayClient, tool: str, **args: Any) -> Any:
    reply = await client.call("tool.invoke", {"tool": f"n1__{tool}", "args": args})
    return reply["result"]


async def test_nul_in_bash_output_is_replaced_and_said(
    gateway: RunningGateway, tmp_path: Path
) -> None:
    """`printf 'a\\0b'` answers at once: the NUL is U+FFFD and `note` says why."""
    async with node_and_client(gateway, tmp_path) as client:
        ran = await invoke(client, "Bash", command="printf 'a\\0b'")
        assert ran["status"] == "completed"
        assert ran["output"] == "a\ufffdb"
        assert "NUL" in ran["note"] and "U+FFFD" in ran["note"]
        again = await invoke(client, "Bash", command="echo fine")  # the node still serves
        assert again["output"].strip() == "fine" and "note" not in again


async def test_undecodable_file_names_reach_the_gateway(
    gateway: RunningGateway, tmp_path: Path
) -> None:
    """A file name that is not UTF-8 (a lone surrogate once decoded) is listed as U+FFFD."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    os.close(os.open(bytes(workspace) + b"/bad-\xff.txt", os.O_CREAT | os.O_WRONLY))
    async with node_and_client(gateway, workspace) as client:
        globbed = await invoke(client, "Glob", pattern="*.txt")
        assert globbed["matches"] == [f"{workspace}/bad-\ufffd.txt"]
        assert "U+FFFD" in globbed["note"]


def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


class _Unencodable(Tool[ToolParams]):
    """A tool whose result no frame can hold (a bug in a tool must not hang the call)."""

    name: ClassVar[str] = "Odd"
    description: ClassVar[str] = "returns something that is not JSON"
    capability: ClassVar[str] = "text.search"
    Params = ToolParams

    def __init__(self, result: Any) -> None:
        self.result = result

    async def run(self, params: ToolParams) -> Any:
        return self.result


@pytest.mark.parametrize(
    "result", [{"value": object()}, _nested(100_000)], ids=["not-json", "too-deep"]
)
async def test_a_result_the_node_cannot_send_becomes_an_error(
    gateway: RunningGateway, tmp_path: Path, result: Any
) -> None:
    """A result that cannot be encoded is answered as an error naming the cause."""
    async with node_and_client(gateway, tmp_path, Toolset([_Unencodable(result)])) as client:
        with pytest.raises(GsvError, match="Odd result could not be sent: it cannot be encoded"):
            await invoke(client, "Odd")


class _RefusingClient:
    """Stands for a gateway that refuses the first `tool.result` it is sent."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def call(self, method: str, params: Any = None, timeout: float | None = 30.0) -> Any:
        self.sent.append(params)
        if len(self.sent) == 1:
            raise InvalidParams("result: refused for the test")
        return {"ok": True}


async def test_a_refused_result_is_answered_with_an_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """When the gateway refuses a tool.result, the node answers the call with an error."""
    daemon = NodeDaemon(NodeSettings(url="ws://127.0.0.1:9", node_id="n1", workspace=tmp_path))
    client = _RefusingClient()
    with caplog.at_level(logging.WARNING):
        await daemon._run_tool_call(
            cast(GatewayClient, client), "c1", "Bash", {"args": {"command": "echo hi"}}
        )
    await daemon.toolset.close()
    assert [sorted(sent) for sent in client.sent] == [["callId", "result"], ["callId", "error"]]
    assert client.sent[1]["callId"] == "c1"
    assert "refused for the test" in client.sent[1]["error"]


def test_replace_bad_text_reaches_keys_and_nested_strings() -> None:
    """Keys and strings at any depth are cleaned; clean data comes back as it was."""
    from gsv_core.protocol.frame_text import replace_bad_text

    clean = {"a": ["b", {"c": 1}]}
    assert replace_bad_text(clean) == (clean, 0)
    dirty = {"k\x00": ["\ud800x", {"y": "\x00\x00"}], "n": 2}
    assert replace_bad_text(dirty) == ({"k\ufffd": ["\ufffdx", {"y": "\ufffd\ufffd"}], "n": 2}, 4)
