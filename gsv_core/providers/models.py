"""Which models a provider offers: its `/models` endpoint through the official SDK
(Anthropic's `models.list`, OpenAI-compatible `models.list`, which Ollama, OpenRouter and
Gemini's OpenAI endpoint all serve). Failures become one sentence with the fix."""

from __future__ import annotations

from typing import Any

from gsv_core.errors import ProviderFailed
from gsv_core.providers.base import ModelRequest
from gsv_core.providers.base import TextDelta
from gsv_core.providers.registry import BUILTINS
from gsv_core.providers.registry import ProviderSettings
from gsv_core.providers.registry import resolve_provider
from gsv_core.providers.retry import RetryPolicy

LIST_TIMEOUT_S = 15.0
TEST_PROMPT = "Reply with the single word OK."
TEST_MAX_TOKENS = 16  # a test call must cost next to nothing
MAX_MODELS = 1000  # OpenRouter lists hundreds; nobody reads more


async def list_models(settings: ProviderSettings, timeout: float = LIST_TIMEOUT_S) -> list[str]:
    """The model ids `settings`' provider offers, sorted."""
    try:
        if settings.api == "anthropic":
            ids = await _anthropic_ids(settings, timeout)
        else:
            ids = await _openai_ids(settings, timeout)
    except Exception as exc:  # the SDKs raise many kinds; each means the same to the user
        raise ProviderFailed(_explain(settings, exc)) from exc
    return sorted(set(ids))[:MAX_MODELS]


async def _anthropic_ids(settings: ProviderSettings, timeout: float) -> list[str]:
    import anthropic

    client = anthropic.AsyncAnthropic(
        api_key=settings.api_key, base_url=settings.base_url, timeout=timeout, max_retries=0
    )
    async with client:
        return [model.id async for model in client.models.list(limit=100)]


async def _openai_ids(settings: ProviderSettings, timeout: float) -> list[str]:
    import openai

    client = openai.AsyncOpenAI(
        api_key=settings.api_key, base_url=settings.base_url, timeout=timeout, max_retries=0
    )
    async with client:
        return [model.id async for model in client.models.list()]


def _explain(settings: ProviderSettings, exc: Exception) -> str:
    status: Any = getattr(exc, "status_code", None)
    where = f'provider "{settings.name}" at {settings.base_url}'
    if status in (401, 403):
        # a provider of your own keeps its key beside its URL
        name = settings.name
        path = f"apiKeys.{name}" if name in BUILTINS else f"providers.{name}.apiKey"
        return (
            f"{where} refused the API key ({status}): set the right one with "
            f"gsv config set {path} KEY"
        )
    if status == 404:
        return f"{where} has no /models endpoint (404): check providers.{settings.name}.baseUrl"
    if status is not None:
        return f"{where} answered {status} to the models list"
    return f"cannot reach {where}: {type(exc).__name__}; is it running and is the URL right?"


async def test_call(config: dict[str, Any], provider: str, model: str, timeout: float) -> str:
    """One tiny live request to `model`: its reply text (ProviderFailed says why not)."""
    client = resolve_provider(config, provider, llm_timeout=timeout, retry=RetryPolicy(retries=0))
    message: Any = {"role": "user", "content": TEST_PROMPT, "timestamp": 0}
    request = ModelRequest(model, "", [message], max_tokens=TEST_MAX_TOKENS)
    parts = [event.text async for event in client.stream(request) if isinstance(event, TextDelta)]
    return "".join(parts).strip()
