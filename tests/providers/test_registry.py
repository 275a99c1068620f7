"""Provider resolution from the gateway config: built-ins, custom endpoints, key lookup
and the messages that tell the user what to run."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from gsv_core.config import effective_config
from gsv_core.errors import ProviderFailed
from gsv_core.providers.anthropic import AnthropicProvider
from gsv_core.providers.openai_compat import OpenAICompatProvider
from gsv_core.providers.registry import PLACEHOLDER_KEY
from gsv_core.providers.registry import ProviderNotConfigured
from gsv_core.providers.registry import provider_settings
from gsv_core.providers.registry import resolve_provider
from tests.fakes.llm_server import fake_llm_server
from tests.fakes.llm_server import reply
from tests.providers import ask
from tests.providers import assemble
from tests.providers import collect


def config(**overrides: Any) -> dict[str, Any]:
    return effective_config(overrides)


@pytest.mark.parametrize(
    ("name", "cls", "base_url", "env_var"),
    [
        ("anthropic", AnthropicProvider, "https://api.anthropic.com", "ANTHROPIC_API_KEY"),
        ("openai", OpenAICompatProvider, "https://api.openai.com/v1", "OPENAI_API_KEY"),
        ("openrouter", OpenAICompatProvider, "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
        (
            "google",
            OpenAICompatProvider,
            "https://generativelanguage.googleapis.com/v1beta/openai/",
            "GEMINI_API_KEY",
        ),
    ],
)
def test_builtin_providers_resolve_with_a_key_from_the_environment(
    name: str, cls: type, base_url: str, env_var: str
) -> None:
    """Each built-in name picks its SDK and endpoint; the key may come from its env var."""
    provider = resolve_provider(config(), name, llm_timeout=30, env={env_var: "env-key"})
    assert isinstance(provider, cls)
    assert provider.name == name
    assert provider.base_url == base_url  # type: ignore[attr-defined]
    assert provider.api_key == "env-key"  # type: ignore[attr-defined]
    assert provider.llm_timeout == 30  # type: ignore[attr-defined]


def test_key_precedence_is_provider_entry_then_api_keys_then_env() -> None:
    """providers.<name>.apiKey beats apiKeys.<name>, which beats the environment."""
    env = {"OPENAI_API_KEY": "from-env"}
    both = config(providers={"openai": {"apiKey": "from-entry"}}, apiKeys={"openai": "from-keys"})
    assert provider_settings(both, "openai", env).api_key == "from-entry"
    keys_only = config(apiKeys={"openai": "from-keys"})
    assert provider_settings(keys_only, "openai", env).api_key == "from-keys"
    assert provider_settings(config(), "openai", env).api_key == "from-env"


def test_the_process_environment_is_the_default_key_source(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without an explicit env mapping the real environment is read."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-process")
    assert provider_settings(config(), "anthropic").api_key == "sk-ant-process"


def test_custom_local_provider_needs_no_key() -> None:
    """providers.ollama with a loopback baseUrl resolves to the OpenAI SDK with a placeholder key."""
    cfg = config(providers={"ollama": {"api": "openai", "baseUrl": "http://127.0.0.1:11434/v1"}})
    provider = resolve_provider(cfg, "ollama", llm_timeout=60, env={})
    assert isinstance(provider, OpenAICompatProvider)
    assert provider.base_url == "http://127.0.0.1:11434/v1"
    assert provider.api_key == PLACEHOLDER_KEY


def test_custom_provider_key_comes_from_its_own_env_var() -> None:
    """A custom name reads <NAME>_API_KEY, with non-alphanumerics as underscores."""
    cfg = config(providers={"my-vllm": {"baseUrl": "https://llm.example.com/v1"}})
    assert provider_settings(cfg, "my-vllm", {"MY_VLLM_API_KEY": "k1"}).api_key == "k1"
    # a custom OpenAI-compatible endpoint may take no key at all
    assert provider_settings(cfg, "my-vllm", {}).api_key == PLACEHOLDER_KEY


def test_custom_anthropic_endpoint_resolves_to_the_anthropic_sdk() -> None:
    """api "anthropic" on a custom name picks the Anthropic adapter at that URL."""
    cfg = config(providers={"proxy": {"api": "anthropic", "baseUrl": "https://gw.example.com"}})
    provider = resolve_provider(cfg, "proxy", llm_timeout=60, env={"PROXY_API_KEY": "k"})
    assert isinstance(provider, AnthropicProvider)
    assert provider.base_url == "https://gw.example.com"


def test_builtin_base_url_can_be_overridden() -> None:
    """providers.openai.baseUrl moves the built-in elsewhere, keeping its API and env key."""
    cfg = config(providers={"openai": {"baseUrl": "https://proxy.example.com/v1"}})
    settings = provider_settings(cfg, "openai", {"OPENAI_API_KEY": "k"})
    assert (settings.api, settings.base_url, settings.api_key) == (
        "openai",
        "https://proxy.example.com/v1",
        "k",
    )


def test_missing_key_names_the_command_to_run() -> None:
    """A hosted provider without any key fails with the exact gsv config set to run."""
    with pytest.raises(ProviderNotConfigured) as caught:
        resolve_provider(config(), "anthropic", llm_timeout=60, env={})
    assert caught.value.message == (
        "no API key for anthropic: run gsv config set apiKeys.anthropic sk-ant-... "
        "(or set ANTHROPIC_API_KEY)"
    )
    assert isinstance(caught.value, ProviderFailed)
    assert not caught.value.retryable


def test_blank_keys_count_as_missing() -> None:
    """An empty or whitespace key is no key."""
    with pytest.raises(ProviderNotConfigured, match="no API key for openai"):
        provider_settings(config(apiKeys={"openai": "  "}), "openai", {"OPENAI_API_KEY": ""})


def test_unknown_provider_names_the_command_to_add_it() -> None:
    """An unknown name fails with the gsv config set that adds it as an endpoint."""
    with pytest.raises(ProviderNotConfigured) as caught:
        resolve_provider(config(), "foo", llm_timeout=60, env={})
    assert caught.value.message.startswith('unknown provider "foo"')
    assert (
        "gsv config set providers.foo "
        """'{"api": "openai", "baseUrl": "http://127.0.0.1:11434/v1"}'"""
    ) in caught.value.message


def test_custom_provider_without_base_url_names_the_command() -> None:
    """A custom entry without baseUrl says how to set it."""
    cfg = config(providers={"lmstudio": {"api": "openai"}})
    with pytest.raises(ProviderNotConfigured, match=r"gsv config set providers\.lmstudio\.baseUrl"):
        provider_settings(cfg, "lmstudio", {})


def test_unknown_api_is_refused() -> None:
    """An api other than openai or anthropic is refused with the fix."""
    cfg = {"providers": {"x": {"api": "cohere", "baseUrl": "http://127.0.0.1:1"}}}
    with pytest.raises(ProviderNotConfigured, match='api "cohere"; use openai or anthropic'):
        provider_settings(cfg, "x", {})


@pytest.mark.parametrize("mode", ["native", "text", "off"])
def test_the_tool_call_mode_reaches_the_provider(mode: str) -> None:
    """providers.<name>.toolCalls is the provider's mode; unset, native."""
    entry = {"api": "openai", "baseUrl": "http://127.0.0.1:1/v1", "toolCalls": mode}
    made = resolve_provider(config(providers={"x": entry}), "x", llm_timeout=5)
    assert isinstance(made, OpenAICompatProvider) and made.tool_calls == mode
    assert (
        provider_settings(config(providers={"x": {**entry, "toolCalls": None}}), "x").tool_calls
        == "native"
    )


@pytest.mark.parametrize("mode", ["json", "", 1, True, "NATIVE"])
def test_an_unknown_tool_call_mode_is_refused_with_the_fix(mode: object) -> None:
    """A partial config the config model never saw still cannot pick a mode gsv lacks."""
    cfg = {"providers": {"x": {"api": "openai", "baseUrl": "http://127.0.0.1:1/v1",
                               "toolCalls": mode}}}  # fmt: skip
    with pytest.raises(ProviderNotConfigured, match=r"use native, text or off: gsv config set "
                       r"providers\.x\.toolCalls text"):  # fmt: skip
        provider_settings(cfg, "x", {})


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_configured_fake_provider_streams_from_the_fake_server(api: str) -> None:
    """providers.fake pointed at the fake server, as later gateway tests configure it, streams."""
    with fake_llm_server() as server:
        base_url = server.openai_base_url if api == "openai" else server.anthropic_base_url
        cfg = config(providers={"fake": {"api": api, "baseUrl": base_url}})
        server.enqueue(reply("from ", "the fake"))
        provider = resolve_provider(cfg, "fake", llm_timeout=10, env={})
        events = await collect(provider, ask())
    assert assemble(provider, ask(), events)["content"] == [
        {"type": "text", "text": "from the fake"}
    ]


def test_resolving_providers_imports_no_sdk() -> None:
    """The registry and both adapters import the SDKs only when a request is made."""
    code = (
        "import sys\n"
        "from gsv_core.providers.registry import resolve_provider\n"
        "cfg = {'providers': {'a': {'api': 'anthropic', 'baseUrl': 'http://127.0.0.1:1'}}}\n"
        "resolve_provider(cfg, 'a', llm_timeout=1, env={})\n"
        "resolve_provider(cfg, 'openai', llm_timeout=1, env={'OPENAI_API_KEY': 'k'})\n"
        "print(sorted(m for m in ('openai', 'anthropic', 'httpx2') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
