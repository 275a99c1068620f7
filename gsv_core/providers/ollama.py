"""The context window an Ollama server reports for a model (docs/models.md#ollama).

Ollama serves the OpenAI-compatible API at `<host>/v1` and its own at `<host>/api`; its
`POST /api/show {"model": name}` answers `model_info` with `<architecture>.context_length`
(`llama.context_length`, `qwen2.context_length`, ...). That number replaces the default
window a model id alone would get (`providers.<name>.contextWindow` and
`model.contextWindow` still win: the owner knows best).

A provider is taken for Ollama when its name says so or its URL has Ollama's port. The
answer is kept per server and model; a failure is logged and the default used, and the
server is asked again only after RETRY_AFTER_S.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING
from typing import Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from gsv_core.providers.registry import ProviderSettings

log = logging.getLogger(__name__)

OLLAMA_PORT = 11434
SHOW_TIMEOUT_S = 5.0
RETRY_AFTER_S = 300.0
# a reported window outside these is taken for a bad answer
MIN_WINDOW, MAX_WINDOW = 1024, 100_000_000


def is_ollama(settings: ProviderSettings) -> bool:
    return "ollama" in settings.name.lower() or urlsplit(settings.base_url).port == OLLAMA_PORT


def show_url(base_url: str) -> str:
    """Ollama's `/api/show` beside the OpenAI-compatible `base_url` (`.../v1`)."""
    return base_url.rstrip("/").removesuffix("/v1") + "/api/show"


def parse_context_length(answer: Any) -> int | None:
    """The `*.context_length` of an `/api/show` answer, when it holds a sensible one."""
    info = answer.get("model_info") if isinstance(answer, dict) else None
    if not isinstance(info, dict):
        return None
    for key, value in info.items():
        number = isinstance(value, int) and not isinstance(value, bool)
        if str(key).endswith(".context_length") and number and MIN_WINDOW <= value <= MAX_WINDOW:
            return int(value)
    return None


async def fetch_context_length(settings: ProviderSettings, model: str) -> int:
    """The window Ollama reports for `model`; raises httpx.HTTPError or ValueError."""
    import httpx

    from gsv_core.providers.registry import PLACEHOLDER_KEY

    key = settings.api_key
    headers = {"Authorization": f"Bearer {key}"} if key and key != PLACEHOLDER_KEY else {}
    async with httpx.AsyncClient(timeout=SHOW_TIMEOUT_S, trust_env=False) as client:
        answer = await client.post(
            show_url(settings.base_url), json={"model": model}, headers=headers
        )
        answer.raise_for_status()
        window = parse_context_length(answer.json())
    if window is None:
        raise ValueError("its answer holds no model_info.<arch>.context_length")
    return window


class ReportedWindows:
    """The windows Ollama servers reported, per (server, model)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._known: dict[tuple[str, str], int] = {}
        self._failed: dict[tuple[str, str], float] = {}  # when asking last failed

    async def get(self, settings: ProviderSettings, model: str) -> int | None:
        """The reported window of `model`, or None (not Ollama, or it did not say)."""
        if not is_ollama(settings):
            return None
        key = (settings.base_url, model)
        if key in self._known:
            return self._known[key]
        failed = self._failed.get(key)
        if failed is not None and self._clock() - failed < RETRY_AFTER_S:
            return None
        import httpx

        try:
            window = await fetch_context_length(settings, model)
        except (httpx.HTTPError, ValueError) as exc:
            log.warning("Ollama at %s did not say the context window of %s (%s: %s); "
                        "using the default", settings.base_url, model,
                        type(exc).__name__, exc)  # fmt: skip
            self._failed[key] = self._clock()
            return None
        self._known[key] = window
        self._failed.pop(key, None)
        return window
