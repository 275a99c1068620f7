"""When no model is usable yet: telling that from the gateway's config or a run's error, and
the text offering the setup screen (/setup) and the exact shell commands that configure
Anthropic, OpenAI or a local Ollama."""

from __future__ import annotations

from typing import Any

# the hosted providers the gateway knows, with the variable it also reads the key from
HOSTED_KEY_VARS = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "google": "GEMINI_API_KEY",
}

SETUP_COMMANDS = """\
Type /setup (or press F2) to set one up here, or run these in a shell and send again:
Anthropic:
  gsv config set apiKeys.anthropic sk-ant-...
OpenAI:
  gsv config set apiKeys.openai sk-...
  gsv config set model '{"provider":"openai","id":"gpt-5"}'
Ollama on this machine (no key):
  gsv config set providers.ollama '{"api":"openai","baseUrl":"http://127.0.0.1:11434/v1"}'
  gsv config set model '{"provider":"ollama","id":"llama3.1"}'"""

# what the gateway's provider registry says when the model cannot be reached at all
_NOT_CONFIGURED = ("no API key for", "unknown provider", "has no baseUrl", "gsv config set api")


def is_setup_error(error: str) -> bool:
    """Whether a run failed because no model is configured (not a passing provider error)."""
    return any(marker in error for marker in _NOT_CONFIGURED)


def missing_key(config: dict[str, Any], provider: str) -> str | None:
    """`provider` (the one the next message uses) when it is a hosted provider and the
    gateway config holds no key for it, else None. (The key may still come from the
    gateway's environment: the text says so.)"""
    if provider not in HOSTED_KEY_VARS:
        return None
    keys = config.get("apiKeys")
    providers = config.get("providers")
    custom = providers.get(provider) if isinstance(providers, dict) else None
    if isinstance(keys, dict) and keys.get(provider):
        return None
    if isinstance(custom, dict) and (custom.get("apiKey") or custom.get("baseUrl")):
        return None
    return provider


def setup_text(provider: str | None = None, error: str | None = None) -> str:
    """The plain text shown in the chat: why, then the commands."""
    if error is not None:
        head = f"No model is configured yet. The gateway said: {error}"
    else:
        var = HOSTED_KEY_VARS.get(provider or "", "")
        head = (
            f"No API key for {provider} is set in the gateway's config (unless {var} is set "
            "where the gateway runs, the first message will fail)."
        )
    return f"{head}\n{SETUP_COMMANDS}"
