"""`gsv models list` against a fake provider on 127.0.0.1 (the official SDKs speak HTTP to
it), and `gsv --version`."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner
from typer.testing import Result

from gsv_cli.main import app
from gsv_core import __version__
from gsv_core.gateway.server import RunningGateway
from tests.fakes.llm_server import ErrorReply
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import ToolCall
from tests.fakes.llm_server import Turn
from tests.fakes.llm_server import fake_llm_server
from tests.fakes.llm_server import reply


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with fake_llm_server() as server:
        yield server


def gsv(url: str, *args: str) -> Result:
    return CliRunner().invoke(app, ["--url", url, *args])


def configure(url: str, name: str, api: str, base_url: str, key: str | None = None) -> None:
    provider: dict[str, str] = {"api": api, "baseUrl": base_url}
    assert gsv(url, "config", "set", f"providers.{name}", json.dumps(provider)).exit_code == 0
    if key:
        assert gsv(url, "config", "set", f"providers.{name}.apiKey", key).exit_code == 0


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_models_are_listed_and_the_one_in_use_marked(
    live: RunningGateway, llm: FakeLLMServer, api: str
) -> None:
    base = llm.openai_base_url if api == "openai" else llm.anthropic_base_url
    configure(live.url, "local", api, base, key="sk-test")
    model = json.dumps({"provider": "local", "id": "fake-large"})
    assert gsv(live.url, "config", "set", "model", model).exit_code == 0
    shown = gsv(live.url, "models", "list")
    assert shown.exit_code == 0, shown.output
    assert "fake-small" in shown.stdout and "* " in shown.stdout
    marked = [line for line in shown.stdout.splitlines() if "fake-large" in line]
    assert marked and "*" in marked[0]
    as_json = json.loads(gsv(live.url, "--json", "models", "list").stdout)
    assert as_json == {"provider": "local", "models": ["fake-large", "fake-small"], "count": 2,
                       "current": "fake-large"}  # fmt: skip


def test_another_provider_by_name(live: RunningGateway, llm: FakeLLMServer) -> None:
    configure(live.url, "ollama", "openai", llm.openai_base_url)  # no key: a local server
    llm.models = ["llama3.1:latest"]
    result = json.loads(gsv(live.url, "--json", "models", "list", "-p", "ollama").stdout)
    assert result["models"] == ["llama3.1:latest"] and "current" not in result


def test_a_refused_key_says_how_to_fix_it(live: RunningGateway, llm: FakeLLMServer) -> None:
    llm.api_key = "sk-right"
    configure(live.url, "local", "openai", llm.openai_base_url, key="sk-wrong")
    result = gsv(live.url, "models", "list", "--provider", "local")
    assert result.exit_code == 1
    assert "refused the API key (401)" in result.stderr
    # its key is in providers.local.apiKey, which wins over apiKeys.local
    assert "gsv config set providers.local.apiKey KEY" in result.stderr
    assert "sk-wrong" not in result.output


def test_an_unreachable_provider_and_an_unknown_one(live: RunningGateway) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    configure(live.url, "gone", "openai", f"http://127.0.0.1:{port}/v1")
    gone = gsv(live.url, "models", "list", "--provider", "gone")
    assert gone.exit_code == 1 and "cannot reach provider" in gone.stderr
    unknown = gsv(live.url, "models", "list", "--provider", "nope")
    assert unknown.exit_code == 1 and "nope" in unknown.stderr
    assert "Traceback" not in gone.output + unknown.output


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(flag: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gsv_cli", flag], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout == f"gsv {__version__}\n"


@pytest.mark.parametrize(("url", "meant"), [("http://127.0.0.1:8787", "ws://127.0.0.1:8787/ws"),
                                            ("https://gw.example/", "wss://gw.example/ws")])  # fmt: skip
def test_an_http_url_says_the_ws_url_it_means(url: str, meant: str) -> None:
    result = gsv(url, "sessions", "list")
    assert result.exit_code == 1 and f"did you mean {meant}" in result.stderr


def test_a_wrong_path_is_not_called_a_dead_gateway(live: RunningGateway) -> None:
    wrong = live.url.removesuffix("/ws") + "/chat"
    result = gsv(wrong, "sessions", "list")
    assert result.exit_code == 3
    assert "path is /ws" in result.stderr and "Start it" not in result.stderr


async def test_models_tried_with_unsaved_settings_save_nothing_and_bad_ones_are_refused(
    gateway: RunningGateway, llm: FakeLLMServer
) -> None:
    """models.list/models.test `settings`: the provider is tried with them, nothing is
    kept; a value config.set would refuse is a 400 naming the path."""
    from gsv_core.client import GatewayClient
    from gsv_core.errors import InvalidParams

    trial = {"providers.trial": {"api": "openai", "baseUrl": llm.openai_base_url}}
    async with GatewayClient(gateway.url, token=gateway.token) as client:
        listed = await client.call("models.list", {"provider": "trial", "settings": trial})
        assert sorted(listed["models"]) == sorted(llm.models)
        assert "value" not in await client.call("config.get", {"path": "providers.trial"})
        with pytest.raises(InvalidParams, match=r"providers\.trial"):
            await client.call("models.list", {"provider": "trial",
                                              "settings": {"providers.trial": {"api": 5}}})  # fmt: skip


PROBE_CALL = '{"name": "echo", "arguments": {"text": "ping"}}'
NO_TOOLS = ErrorReply(400, "registry.ollama.ai/library/gemma:2b does not support tools")


@pytest.mark.parametrize(
    ("answers", "calls", "said", "hint"),
    [
        ([reply(ToolCall("echo", {"text": "ping"}))], "native", "native tool calls", None),
        ([reply("I cannot."), reply(PROBE_CALL)], "text", "tool calls as text", "text"),
        ([NO_TOOLS, reply(f"```json\n{PROBE_CALL}\n```")], "text", "tool calls as text", "text"),
        ([reply("No."), reply(f"I would say {PROBE_CALL}.")], "none", "no tool calls", "off"),
        ([NO_TOOLS, reply("pong")], "none", "no tool calls", "off"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_models_test_says_how_the_model_calls_tools(
    live: RunningGateway,
    llm: FakeLLMServer,
    api: str,
    answers: list[Turn],
    calls: str,
    said: str,
    hint: str | None,
) -> None:
    """After the tiny call, the model is offered one harmless tool natively, then as text;
    the answer names what it did and the toolCalls setting that suits it."""
    base = llm.openai_base_url if api == "openai" else llm.anthropic_base_url
    configure(live.url, "local", api, base)
    llm.enqueue(reply("OK"), *answers)
    result = gsv(live.url, "models", "test", "-p", "local", "-m", "fake-small")
    assert result.exit_code == 0, result.output
    assert f"tool calls: {said}\n" in result.stdout
    assert "context window: 128000 tokens\n" in result.stdout  # the default: not Ollama
    setting = f"gsv config set providers.local.toolCalls {hint}"
    assert (setting in " ".join(result.stderr.split())) is (hint is not None)
    native, *text = llm.requests[1:]
    assert [t.get("name") or t["function"]["name"] for t in native.body["tools"]] == ["echo"]
    for probe in text:  # offered in the system prompt, not the API's field
        assert "tools" not in probe.body and "- echo: " in json.dumps(probe.body)
    llm.enqueue(reply("OK"), *answers)
    as_json = json.loads(gsv(live.url, "--json", "models", "test", "-p", "local",
                             "-m", "fake-small").stdout)  # fmt: skip
    assert as_json["toolCalls"] == calls and as_json["contextWindow"] == 128000
    assert "contextWindowReported" not in as_json


def test_models_test_shows_the_window_ollama_reports(
    live: RunningGateway, llm: FakeLLMServer
) -> None:
    """For Ollama the window its /api/show reports is the one shown (and used)."""
    configure(live.url, "ollama", "openai", llm.openai_base_url)
    llm.show["qwen2.5:0.5b"] = {"model_info": {"qwen2.context_length": 32768}}
    result = gsv(live.url, "models", "test", "-p", "ollama", "-m", "qwen2.5:0.5b")
    assert result.exit_code == 0, result.output
    assert "context window: 32768 tokens (reported by the server)\n" in result.stdout
    as_json = json.loads(gsv(live.url, "--json", "models", "test", "-p", "ollama",
                             "-m", "qwen2.5:0.5b").stdout)  # fmt: skip
    assert (as_json["contextWindow"], as_json["contextWindowReported"]) == (32768, 32768)
    assert llm.show_requests == [{"model": "qwen2.5:0.5b"}]  # asked once, then kept
