"""Setting up a model provider, shared by `gsv onboard` and the chat TUI's setup screen:
the providers offered, finding a local Ollama, the gateway config writes that configure a
provider and its key, and the model picked by default from a provider's list.

Both callers send the same `config.set` writes (the gateway keeps keys in its secret
store), so a provider set up in the chat is configured exactly as `gsv onboard` does it.
"""

from __future__ import annotations

from typing import Any

from gsv_core.errors import InvalidParams

OLLAMA_URL = "http://127.0.0.1:11434"
# the hosted providers the gateway knows, each needing an API key
KEYED = ("anthropic", "openai", "openrouter", "google")
PREFERRED = ("claude-sonnet", "gpt-5", "gemini", "llama3", "qwen")  # a sensible default


def ollama_running() -> bool:
    """Whether a local Ollama answers on its usual port (blocks up to half a second)."""
    import urllib.request

    try:
        with urllib.request.urlopen(f"{OLLAMA_URL}/api/tags", timeout=0.5) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def http_url(url: str) -> str:
    """An OpenAI-compatible base URL as the config keeps it (no trailing slash)."""
    from urllib.parse import urlsplit

    if urlsplit(url.strip()).scheme not in ("http", "https"):
        raise InvalidParams(f"the base URL must be an http(s) URL, got {url!r}")
    return url.strip().rstrip("/")


def config_writes(name: str, base_url: str | None, key: str | None) -> list[tuple[str, Any]]:
    """The `config.set` writes (path, value) that configure provider `name`: Ollama at its
    local URL, any other unknown name as an OpenAI-compatible `base_url`, then the key."""
    writes: list[tuple[str, Any]] = []
    if name == "ollama":
        writes.append(("providers.ollama", {"api": "openai", "baseUrl": f"{OLLAMA_URL}/v1"}))
    elif name not in KEYED:
        if not base_url:
            raise InvalidParams(f"provider {name} needs a base URL (an OpenAI-compatible /v1 URL)")
        writes.append((f"providers.{name}", {"api": "openai", "baseUrl": http_url(base_url)}))
    if key:
        writes.append((key_path(name), key))
    return writes


def key_path(name: str) -> str:
    """Where the gateway config keeps provider `name`'s API key."""
    return f"apiKeys.{name}" if name in KEYED else f"providers.{name}.apiKey"


def default_model(models: list[str]) -> str:
    """The model offered first: the first of PREFERRED found, else the first listed."""
    for wanted in PREFERRED:
        for model in models:
            if wanted in model:
                return model
    return models[0]
