"""End to end with every real part: a gateway (thread), a node daemon (`gsv node run`
subprocess), the official SDKs talking HTTP to the fake LLM server, and `gsv chat`."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gsv_cli.main import app
from gsv_core.gateway.server import RunningGateway
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import ToolCall
from tests.fakes.llm_server import reply
from tests.threaded import owner_env


@pytest.fixture
def node(live: RunningGateway, tmp_path: Path) -> Iterator[Path]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gsv_cli", "--url", live.url, "node", "run", "--id", "laptop",
         "--workspace", str(workspace), "--no-log-stderr"],
        stdout=subprocess.DEVNULL, env=owner_env(live),
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while "laptop" not in live.gateway.nodes.online_ids():
        assert time.monotonic() < deadline, "the node did not connect"
        time.sleep(0.05)
    yield workspace
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)


def configure(url: str, api: str, base_url: str) -> None:
    runner = CliRunner()
    provider = f'{{"api": "{api}", "baseUrl": "{base_url}"}}'
    for path, value in (
        ("providers.fake", provider),
        ("model", '{"provider": "fake", "id": "fake-1"}'),
    ):
        assert runner.invoke(app, ["--url", url, "config", "set", path, value]).exit_code == 0


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_gsv_chat_reads_a_file_through_a_node_and_streams_the_answer(
    live: RunningGateway, node: Path, llm: FakeLLMServer, api: str
) -> None:
    """The model asks for laptop__Read, the node reads the file, the answer streams out."""
    (node / "notes.txt").write_text("the launch code is 0000\n")
    base = llm.openai_base_url if api == "openai" else llm.anthropic_base_url
    configure(live.url, api, base)
    llm.enqueue(reply("Let me look.", ToolCall("laptop__Read", {"path": "notes.txt"})))
    llm.enqueue(reply("The file says the launch code is ", "0000."))
    result = CliRunner().invoke(app, ["--url", live.url, "chat", "read the file"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "Let me look.\nThe file says the launch code is 0000.\n"
    assert "[tool] laptop__Read" in result.stderr
    second = str(llm.requests[1].body)
    assert "the launch code is 0000" in second  # the tool result went back to the model
    tools = llm.requests[0].body["tools"]
    names = [t.get("name") or t["function"]["name"] for t in tools]
    assert "laptop__Read" in names and "gsv__ReadFile" in names
    assert names[-1] == "gsv__ToolSearch" and "gsv__ConfigGet" not in names  # on demand
