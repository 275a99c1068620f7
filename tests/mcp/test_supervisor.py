"""The supervisor against real MCP servers (the toy server of tests/mcp/servers): tools
offered under valid names, results mapped, a crash restarts the server, a hang times
out, 200 tools are all listed, and streamable HTTP works like stdio."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gsv_core.errors import NotFound
from gsv_core.errors import TimedOut
from gsv_core.errors import ToolFailed
from gsv_core.errors import Unavailable
from gsv_core.mcp.supervisor import FAILED
from gsv_core.mcp.supervisor import HALT_WITHIN
from gsv_core.mcp.supervisor import READY
from gsv_core.mcp.supervisor import McpSupervisor
from tests.mcp.conftest import HttpServer
from tests.mcp.conftest import eventually
from tests.mcp.conftest import stdio

MODEL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


@pytest.fixture
async def servers() -> AsyncIterator[dict[str, Any]]:
    """The `mcp.servers` section a test fills in before `start()`."""
    yield {}


@pytest.fixture
async def supervisor(servers: dict[str, Any]) -> AsyncIterator[McpSupervisor]:
    running = McpSupervisor(lambda: servers)
    yield running
    await running.close()


async def started(supervisor: McpSupervisor, name: str) -> None:
    supervisor.start()
    state = await supervisor.settle(name)
    assert state is not None and state.state == READY, state and state.last_error


async def test_a_stdio_server_offers_its_tools_and_answers(
    servers: dict[str, Any], supervisor: McpSupervisor, caplog: pytest.LogCaptureFixture
) -> None:
    servers["toy"] = stdio()
    caplog.set_level(logging.INFO)
    await started(supervisor, "toy")
    names = [spec.name for spec in supervisor.specs()]
    assert names == [
        f"mcp_toy__{t}"
        for t in (
            "echo",
            "picture",
            "weather",
            "readme",
            "crash",
            "hang",
            "read_note",
            "write_note",
        )
    ]
    echo = next(s for s in supervisor.specs() if s.name == "mcp_toy__echo")
    assert echo.description == "Say the text back."
    assert echo.parameters["properties"]["text"]["type"] == "string"
    assert await supervisor.call("mcp_toy__echo", {"text": "hi"}) == {
        "content": [{"type": "text", "text": "echo: hi"}]
    }
    # the skipped tool is named in the log; the server's stderr reaches the log too
    assert "tool 'bad.name' skipped" in caplog.text
    await eventually(lambda: "echo called with 2 characters" in caplog.text, "stderr logged")


async def test_only_tools_marked_read_only_by_the_running_server_read_as_read_only(
    servers: dict[str, Any], supervisor: McpSupervisor
) -> None:
    """readOnlyHint true (read_note) is read-only; other annotations (write_note), none
    (echo), a tool no ready server offers, are not."""
    servers["toy"] = stdio()
    await started(supervisor, "toy")
    assert supervisor.read_only("mcp_toy__read_note") is True
    for name in ("mcp_toy__write_note", "mcp_toy__echo", "mcp_toy__nope", "mcp_gone__read_note"):
        assert supervisor.read_only(name) is False, name


async def test_images_resources_and_structured_content_become_blocks(
    servers: dict[str, Any], supervisor: McpSupervisor
) -> None:
    servers["toy"] = stdio()
    await started(supervisor, "toy")
    picture = (await supervisor.call("mcp_toy__picture", {}))["content"]
    assert picture[0]["type"] == "image" and picture[0]["mimeType"] == "image/png"
    assert picture[0]["data"].startswith("iVBORw0KGgo")
    weather = (await supervisor.call("mcp_toy__weather", {"city": "Oslo"}))["content"]
    assert '"celsius": 21.5' in weather[0]["text"]
    readme = (await supervisor.call("mcp_toy__readme", {}))["content"]
    assert readme == [
        {"type": "text", "text": "[resource file:///README.md (text/markdown)]\n# Toy"}
    ]


async def test_a_server_that_crashes_mid_call_fails_the_call_and_is_restarted(
    servers: dict[str, Any], supervisor: McpSupervisor
) -> None:
    servers["toy"] = stdio()
    await started(supervisor, "toy")
    state = supervisor.state("toy")
    assert state is not None and state.connection is not None
    first = state.connection
    with pytest.raises(ToolFailed, match="MCP server toy closed the connection during crash"):
        await supervisor.call("mcp_toy__crash", {})

    async def answers_again() -> bool:
        state = supervisor.state("toy")
        return state is not None and state.state == READY and state.connection not in (None, first)

    await eventually(answers_again, "the restarted server")
    assert await supervisor.call("mcp_toy__echo", {"text": "back"}) == {
        "content": [{"type": "text", "text": "echo: back"}]
    }
    state = supervisor.state("toy")
    assert state is not None and state.last_error == "the connection was lost"


async def test_a_server_that_dies_between_calls_is_noticed_and_restarted(
    servers: dict[str, Any], tmp_path: Path
) -> None:
    pid_file = tmp_path / "toy.pid"
    servers["toy"] = stdio(env={"TOY_PID_FILE": str(pid_file)})
    supervisor = McpSupervisor(lambda: servers, ping_interval=0.2)
    try:
        await started(supervisor, "toy")
        first = int(pid_file.read_text())
        os.kill(first, signal.SIGKILL)
        await eventually(lambda: int(pid_file.read_text()) != first, "a new server process")

        def ready() -> bool:
            state = supervisor.state("toy")
            return state is not None and state.state == READY

        await eventually(ready, "the restarted server")
        assert (await supervisor.call("mcp_toy__echo", {"text": "y"}))["content"][0][
            "text"
        ] == "echo: y"
    finally:
        await supervisor.close()


async def test_a_hanging_tool_times_out_with_the_servers_timeout(
    servers: dict[str, Any], supervisor: McpSupervisor
) -> None:
    servers["toy"] = stdio(timeoutMs=2000)
    await started(supervisor, "toy")
    with pytest.raises(TimedOut, match="MCP server toy: hang timed out after 2 seconds"):
        await supervisor.call("mcp_toy__hang", {})
    # the server itself is fine: the next call answers
    assert (await supervisor.call("mcp_toy__echo", {"text": "x"}))["content"][0][
        "text"
    ] == "echo: x"


async def test_two_hundred_tools_are_all_offered_under_valid_names(
    servers: dict[str, Any], supervisor: McpSupervisor
) -> None:
    servers["many"] = stdio("--many")
    await started(supervisor, "many")
    names = [spec.name for spec in supervisor.specs()]
    numbered = [n for n in names if n.startswith("mcp_many__tool_")]
    assert numbered == [f"mcp_many__tool_{i:03d}" for i in range(200)]
    assert len(names) == 208 and all(MODEL_NAME.fullmatch(n) for n in names)
    assert await supervisor.call("mcp_many__tool_199", {}) == {
        "content": [{"type": "text", "text": "tool 199"}]
    }


async def test_allow_and_deny_lists_choose_the_tools(
    servers: dict[str, Any], supervisor: McpSupervisor
) -> None:
    servers["a"] = stdio(allowTools=["echo", "hang"], denyTools=["hang"])
    await started(supervisor, "a")
    assert [s.name for s in supervisor.specs()] == ["mcp_a__echo"]
    with pytest.raises(NotFound, match="offers no tool 'crash'"):
        await supervisor.call("mcp_a__crash", {})


async def test_a_streamable_http_server_works_like_stdio(
    servers: dict[str, Any], supervisor: McpSupervisor, http_server: HttpServer
) -> None:
    servers["web"] = {"url": http_server.url, "headers": {"Authorization": "Bearer t"}}
    await started(supervisor, "web")
    assert "mcp_web__echo" in [s.name for s in supervisor.specs()]
    assert await supervisor.call("mcp_web__echo", {"text": "over http"}) == {
        "content": [{"type": "text", "text": "echo: over http"}]
    }


async def test_a_server_that_cannot_start_is_failed_with_its_error_and_a_config_change_retries(
    servers: dict[str, Any], supervisor: McpSupervisor, tmp_path: Any
) -> None:
    servers["gone"] = {"command": str(tmp_path / "no-such-program")}
    servers["off"] = {**stdio(), "enabled": False}
    supervisor.start()
    state = await supervisor.settle("gone")
    assert state is not None and state.state == FAILED
    assert state.last_error is not None and "no-such-program" in state.last_error
    off = supervisor.state("off")
    assert off is not None and off.state == "disabled"
    with pytest.raises(Unavailable, match="MCP server gone is failed"):
        await supervisor.call("mcp_gone__echo", {})
    servers["gone"] = stdio()
    supervisor.config_changed("mcp.servers.gone")
    await started(supervisor, "gone")
    with pytest.raises(NotFound, match="unknown tool"):
        await supervisor.call("mcp_nobody__echo", {})


async def test_an_http_server_that_goes_away_fails_the_call_clearly_and_is_retried(
    servers: dict[str, Any], supervisor: McpSupervisor, http_server: HttpServer
) -> None:
    servers["web"] = {"url": http_server.url}
    await started(supervisor, "web")
    http_server.process.terminate()
    http_server.process.wait(timeout=10)
    with pytest.raises(ToolFailed, match="MCP server web closed the connection during echo"):
        await supervisor.call("mcp_web__echo", {"text": "anyone?"})

    def retrying() -> bool:
        state = supervisor.state("web")
        return state is not None and state.state == FAILED and state.last_error is not None

    await eventually(retrying, "the server marked failed while it is away")


async def test_a_server_that_never_answers_its_handshake_times_out_and_closes(
    servers: dict[str, Any], supervisor: McpSupervisor
) -> None:
    """A stdio program that reads its input and says nothing (not an MCP server at all):
    `mcp.test` fails with the server's timeout instead of hanging, the supervisor keeps it
    as failed, and closing the supervisor returns (within HALT_WITHIN)."""
    mute = "import sys; sys.stdin.buffer.read()"  # silent; gone when its stdin closes
    servers["mute"] = {"command": sys.executable, "args": ["-c", mute], "startTimeoutMs": 500}
    supervisor.start()
    state = await supervisor.settle("mute")
    assert state is not None and state.state != READY
    with pytest.raises(TimedOut, match=r"MCP server mute did not answer within 0\.5 seconds"):
        await supervisor.test("mute")
    await asyncio.wait_for(supervisor.close(), HALT_WITHIN + 5)
