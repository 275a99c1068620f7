"""The context window Ollama reports (`POST /api/show`, gsv_core/providers/ollama.py):
read from `model_info["<arch>.context_length"]`, kept per model, and a missing or bad
answer falls back to the default with a line in the log. The fake LLM server answers
/api/show as Ollama does."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from gsv_core.agent.compaction import DEFAULT_WINDOW
from gsv_core.agent.compaction import context_window
from gsv_core.providers.ollama import RETRY_AFTER_S
from gsv_core.providers.ollama import ReportedWindows
from gsv_core.providers.ollama import is_ollama
from gsv_core.providers.ollama import parse_context_length
from gsv_core.providers.ollama import show_url
from gsv_core.providers.registry import ProviderSettings
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import fake_llm_server

LLAMA = {"model_info": {"general.architecture": "llama", "general.parameter_count": 8030261248,
                        "llama.context_length": 131072, "llama.embedding_length": 4096}}  # fmt: skip


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with fake_llm_server() as running:
        yield running


def settings(base_url: str, name: str = "ollama", key: str = "no-key-needed") -> ProviderSettings:
    return ProviderSettings(name=name, api="openai", base_url=base_url, api_key=key)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("answer", "window"),
    [
        (LLAMA, 131072),
        ({"model_info": {"qwen2.context_length": 32768}, "details": {}}, 32768),
        ({"model_info": {"gemma3.context_length": 1024}}, 1024),
        ({}, None),
        ({"model_info": None}, None),
        ({"model_info": [["llama.context_length", 8192]]}, None),
        ({"model_info": {"llama.context_length": "8192"}}, None),
        ({"model_info": {"llama.context_length": 8192.0}}, None),
        ({"model_info": {"llama.context_length": True}}, None),
        ({"model_info": {"llama.context_length": 512}}, None),  # below any usable window
        ({"model_info": {"llama.context_length": 10**12}}, None),
        ({"model_info": {"context_length": 8192}}, None),  # not `<arch>.context_length`
        ({"model_info": {"llama.context_length_extra": 8192}}, None),
        ([LLAMA], None),
        ("131072", None),
    ],
)
def test_the_window_is_read_from_model_info_or_not_at_all(answer: Any, window: int | None) -> None:
    """Only a whole number in a sensible range under a `*.context_length` key counts."""
    assert parse_context_length(answer) == window


@pytest.mark.parametrize(
    ("base", "url"),
    [
        ("http://127.0.0.1:11434/v1", "http://127.0.0.1:11434/api/show"),
        ("http://127.0.0.1:11434/v1/", "http://127.0.0.1:11434/api/show"),
        ("http://box.lan:11434", "http://box.lan:11434/api/show"),
        ("https://proxy.example/ollama/v1", "https://proxy.example/ollama/api/show"),
    ],
)
def test_api_show_sits_beside_the_openai_compatible_base(base: str, url: str) -> None:
    assert show_url(base) == url


def test_ollama_is_known_by_its_name_or_its_port() -> None:
    assert is_ollama(settings("http://127.0.0.1:9/v1", name="ollama"))
    assert is_ollama(settings("http://127.0.0.1:9/v1", name="my-Ollama-box"))
    assert is_ollama(settings("http://10.0.0.5:11434/v1", name="local"))
    assert not is_ollama(settings("http://127.0.0.1:1234/v1", name="lmstudio"))
    assert not is_ollama(settings("https://api.openai.com/v1", name="openai"))


async def test_the_reported_window_is_asked_once_per_model(server: FakeLLMServer) -> None:
    """The server is asked with the model's name; a second look uses what it said."""
    server.show["llama3.1:8b"] = LLAMA
    server.show["qwen2.5:0.5b"] = {"model_info": {"qwen2.context_length": 32768}}
    windows = ReportedWindows()
    ollama = settings(server.openai_base_url)
    assert await windows.get(ollama, "llama3.1:8b") == 131072
    assert await windows.get(ollama, "llama3.1:8b") == 131072
    assert await windows.get(ollama, "qwen2.5:0.5b") == 32768
    assert server.show_requests == [{"model": "llama3.1:8b"}, {"model": "qwen2.5:0.5b"}]


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (None, "HTTPStatusError"),  # 404: Ollama has no such model
        ("<html>proxy error</html>", "JSONDecodeError"),
        ({"model_info": {"general.architecture": "llama"}}, "no model_info.<arch>.context_length"),
        ({"model_info": {"llama.context_length": -1}}, "no model_info.<arch>.context_length"),
    ],
)
async def test_a_bad_or_missing_answer_falls_back_to_the_default_and_is_logged(
    server: FakeLLMServer, caplog: pytest.LogCaptureFixture, answer: Any, said: str
) -> None:
    """No window is reported, the log says why, and the server is asked again only after
    a while; the model then gets the default window."""
    if answer is not None:
        server.show["tiny"] = answer
    clock = Clock()
    windows = ReportedWindows(clock)
    ollama = settings(server.openai_base_url)
    with caplog.at_level(logging.WARNING, logger="gsv_core.providers.ollama"):
        assert await windows.get(ollama, "tiny") is None
    assert said in caplog.text and "using the default" in caplog.text
    assert await windows.get(ollama, "tiny") is None
    assert len(server.show_requests) == 1
    server.show["tiny"] = {"model_info": {"llama.context_length": 4096}}
    clock.now += RETRY_AFTER_S
    assert await windows.get(ollama, "tiny") == 4096
    assert context_window({}, "ollama", "tiny", None) == DEFAULT_WINDOW


async def test_an_unreachable_server_falls_back_quietly(caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with caplog.at_level(logging.WARNING, logger="gsv_core.providers.ollama"):
        assert await ReportedWindows().get(settings(f"http://127.0.0.1:{port}/v1"), "m") is None
    assert "ConnectError" in caplog.text


async def test_other_providers_are_not_asked(server: FakeLLMServer) -> None:
    server.show["m"] = LLAMA
    assert await ReportedWindows().get(settings(server.openai_base_url, name="vllm"), "m") is None
    assert server.show_requests == []


async def test_a_key_goes_along_and_never_into_the_log(
    server: FakeLLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    """An Ollama behind a proxy that wants the provider's key gets it as a bearer token;
    a failure's log line does not quote it."""
    with caplog.at_level(logging.WARNING, logger="gsv_core.providers.ollama"):
        await ReportedWindows().get(settings(server.openai_base_url, key="sk-secret-123456"), "x")
    assert server.show_headers[0]["Authorization"] == "Bearer sk-secret-123456"
    assert "404" in caplog.text and "sk-secret-123456" not in caplog.text
    await ReportedWindows().get(settings(server.openai_base_url), "x")
    assert "Authorization" not in server.show_headers[1]  # the placeholder is not sent


def test_the_configured_window_beats_the_reported_one() -> None:
    """providers.<name>.contextWindow and model.contextWindow win over the server's word;
    the server's word wins over a window guessed from the model's name."""
    provider = {"providers": {"ollama": {"contextWindow": 8192}}}
    assert context_window(provider, "ollama", "llama3.1", 131072) == 8192
    model = {"model": {"provider": "ollama", "id": "llama3.1", "contextWindow": 16384}}
    assert context_window(model, "ollama", "llama3.1", 131072) == 16384
    assert context_window({}, "ollama", "qwen2.5:0.5b", 32768) == 32768
    assert context_window({}, "ollama", "qwen2.5:0.5b", None) == 128_000  # by its name
