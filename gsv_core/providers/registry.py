"""Which provider a name in the config stands for: its API, endpoint and key.

Built-in names need only a key: `anthropic`, `openai`, `openrouter` and `google` (Gemini's
OpenAI-compatible endpoint). `providers.<name> = {api, baseUrl, apiKey, toolCalls}`
overrides a built-in or adds any endpoint (Ollama, vLLM, LM Studio, a proxy); `toolCalls`
is how its models get tools (tool_call_modes.py). The key is looked up in
`providers.<name>.apiKey`, then `apiKeys.<name>`, then the environment. A local endpoint
needs no key.

What is missing is reported as a ProviderNotConfigured error naming the exact
`gsv config set` command that fixes it. Importing this module imports no SDK.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any
from urllib.parse import urlsplit

from gsv_core.errors import ProviderFailed
from gsv_core.providers.base import Provider
from gsv_core.providers.retry import RetryPolicy
from gsv_core.providers.retry import is_loopback_url
from gsv_core.providers.tool_call_modes import NATIVE
from gsv_core.providers.tool_call_modes import TOOL_CALL_MODES

if TYPE_CHECKING:
    from gsv_core.providers.sdk import SdkProvider

APIS = ("openai", "anthropic")
OPENAI_HOST = "api.openai.com"

# The SDKs insist on a key; servers that need none ignore this one.
PLACEHOLDER_KEY = "no-key-needed"


class ProviderNotConfigured(ProviderFailed):
    """The provider is unknown or lacks a key or URL; the message says which command fixes it."""

    default_retryable = False


@dataclass(frozen=True)
class Endpoint:
    api: str  # "openai" | "anthropic"
    base_url: str
    key_env: str
    key_example: str = "KEY"


BUILTINS: dict[str, Endpoint] = {
    "anthropic": Endpoint(
        "anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY", "sk-ant-..."
    ),
    "openai": Endpoint("openai", "https://api.openai.com/v1", "OPENAI_API_KEY", "sk-..."),
    "openrouter": Endpoint(
        "openai", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", "sk-or-..."
    ),
    "google": Endpoint(
        "openai",
        "https://generativelanguage.googleapis.com/v1beta/openai/",
        "GEMINI_API_KEY",
        "AIza...",
    ),
}


@dataclass(frozen=True)
class ProviderSettings:
    """A provider name resolved against the config: everything needed to build it."""

    name: str
    api: str
    base_url: str
    api_key: str  # the first of `api_keys`
    prompt_cache_key: bool = False  # OpenAI's per-conversation cache routing
    api_keys: tuple[str, ...] = ()  # the key pool, tried in turn (providers/keys.py)
    tool_calls: str = NATIVE  # native | text | off (tool_call_modes.py)


def resolve_provider(
    config: dict[str, Any],
    provider_name: str,
    *,
    llm_timeout: float,
    env: Mapping[str, str] | None = None,
    retry: RetryPolicy | None = None,
    key: str | None = None,
    tool_calls: str | None = None,
) -> Provider:
    """The provider `provider_name` stands for in the effective gateway `config`.

    `llm_timeout` (seconds) bounds each wait on the provider; `retry` overrides the
    default retry policy (tests pass one that does not sleep); `key` picks a key of its
    pool (default: the first); `tool_calls` overrides the provider's tool-call mode
    (`gsv models test` probes each).
    """
    settings = provider_settings(config, provider_name, env)
    return build_provider(
        settings, llm_timeout=llm_timeout, retry=retry or RetryPolicy(), key=key,
        tool_calls=tool_calls,
    )  # fmt: skip


def build_provider(
    settings: ProviderSettings,
    *,
    llm_timeout: float,
    retry: RetryPolicy,
    key: str | None = None,
    keep_client: bool = False,
    tool_calls: str | None = None,
) -> SdkProvider:
    """The provider `settings` describe, with key `key` of its pool (default: the first);
    `keep_client`: one SDK client for all its calls until it is closed (providers/pool.py);
    `tool_calls` overrides the provider's tool-call mode."""
    provider_class: type[SdkProvider]
    if settings.api == "anthropic":
        from gsv_core.providers.anthropic import AnthropicProvider

        provider_class = AnthropicProvider
    else:
        from gsv_core.providers.openai_compat import OpenAICompatProvider

        provider_class = OpenAICompatProvider
    return provider_class(
        settings.name,
        base_url=settings.base_url,
        api_key=key or settings.api_key,
        llm_timeout=llm_timeout,
        retry=retry,
        prompt_cache_key=settings.prompt_cache_key,
        tool_calls=tool_calls or settings.tool_calls,
        keep_client=keep_client,
    )


def provider_settings(
    config: dict[str, Any], name: str, env: Mapping[str, str] | None = None
) -> ProviderSettings:
    """API, base URL and key of provider `name`; ProviderNotConfigured when one is missing."""
    custom = _custom(config, name)
    builtin = BUILTINS.get(name)
    if custom is None and builtin is None:
        raise _unknown(name)
    custom = custom or {}
    api = custom.get("api") or (builtin.api if builtin else "openai")
    if api not in APIS:
        raise ProviderNotConfigured(
            f'provider "{name}" has api "{api}"; use openai or anthropic: '
            f"gsv config set providers.{name}.api openai"
        )
    base_url = custom.get("baseUrl") or (
        builtin.base_url if builtin and builtin.api == api else None
    )
    if not base_url:
        raise ProviderNotConfigured(
            f'provider "{name}" has no baseUrl: run gsv config set '
            f"providers.{name}.baseUrl http://HOST:PORT/v1"
        )
    keys = _api_keys(config, name, custom, builtin, os.environ if env is None else env)
    if not keys:
        if not _needs_key(api, base_url, builtin):
            keys = [PLACEHOLDER_KEY]
        else:
            raise _no_key(name, builtin)
    cache_key = custom.get("promptCacheKey")
    if not isinstance(cache_key, bool):
        cache_key = urlsplit(base_url).hostname == OPENAI_HOST
    mode = custom.get("toolCalls")
    mode = NATIVE if mode is None else mode  # None: unset, as every key here
    if mode not in TOOL_CALL_MODES:  # the config refuses it; a partial config may not
        raise ProviderNotConfigured(
            f'provider "{name}" has toolCalls "{mode}"; use native, text or off: '
            f"gsv config set providers.{name}.toolCalls text"
        )
    return ProviderSettings(name=name, api=api, base_url=base_url, api_key=keys[0],
                            prompt_cache_key=cache_key, api_keys=tuple(keys),
                            tool_calls=mode)  # fmt: skip


def _custom(config: dict[str, Any], name: str) -> dict[str, Any] | None:
    providers = config.get("providers")
    entry = providers.get(name) if isinstance(providers, dict) else None
    return entry if isinstance(entry, dict) else None


def _api_keys(
    config: dict[str, Any],
    name: str,
    custom: dict[str, Any],
    builtin: Endpoint | None,
    env: Mapping[str, str],
) -> list[str]:
    """The first of `providers.<name>.apiKey`, `apiKeys.<name>` and the environment that
    holds a key; a list there is a pool (docs/models.md#key-pools)."""
    keys = config.get("apiKeys")
    configured = keys.get(name) if isinstance(keys, dict) else None
    for candidate in (custom.get("apiKey"), configured, env.get(key_env_var(name, builtin))):
        pool = candidate if isinstance(candidate, list) else [candidate]
        found = [k.strip() for k in pool if isinstance(k, str) and k.strip()]
        if found:
            return list(dict.fromkeys(found))
    return []


def key_env_var(name: str, builtin: Endpoint | None = None) -> str:
    """The environment variable holding a provider's key (`<NAME>_API_KEY` for custom names)."""
    if builtin:
        return builtin.key_env
    return re.sub(r"[^A-Za-z0-9]", "_", name).upper() + "_API_KEY"


def _needs_key(api: str, base_url: str, builtin: Endpoint | None) -> bool:
    """Local servers (Ollama, LM Studio, the test fake) and custom OpenAI-compatible
    endpoints often take no key; the hosted APIs always do."""
    if is_loopback_url(base_url):
        return False
    custom_endpoint = builtin is None or base_url != builtin.base_url
    return not (api == "openai" and custom_endpoint)


def _unknown(name: str) -> ProviderNotConfigured:
    example = json.dumps({"api": "openai", "baseUrl": "http://127.0.0.1:11434/v1"})
    builtins = ", ".join(BUILTINS)
    return ProviderNotConfigured(
        f'unknown provider "{name}" (built in: {builtins}): add it with '
        f"gsv config set providers.{name} '{example}'"
    )


def _no_key(name: str, builtin: Endpoint | None) -> ProviderNotConfigured:
    example = builtin.key_example if builtin else "KEY"
    return ProviderNotConfigured(
        f"no API key for {name}: run gsv config set apiKeys.{name} {example} "
        f"(or set {key_env_var(name, builtin)})"
    )
