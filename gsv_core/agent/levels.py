"""Think levels and model selectors: the vocabulary `/think`, `/model` and the inline
directives share."""

from __future__ import annotations

import re
from typing import NamedTuple

# the values stored in a session's `settings.thinkingLevel`
THINK_LEVELS = ("none", "minimal", "low", "medium", "high", "xhigh")
THINK_LEVELS_LINE = "Levels: off, minimal, low, medium, high, xhigh"

_THINK_ALIASES = {
    "off": "none",
    "none": "none",
    "0": "none",
    "minimal": "minimal",
    "min": "minimal",
    "1": "minimal",
    "low": "low",
    "2": "low",
    "medium": "medium",
    "med": "medium",
    "3": "medium",
    "high": "high",
    "4": "high",
    "xhigh": "xhigh",
    "max": "xhigh",
    "5": "xhigh",
}

MODEL_SELECTOR_HELP = "Use provider/model-id, or model-id to keep the current provider."

_WHITESPACE = re.compile(r"\s")


def normalize_think_level(raw: str | None) -> str | None:
    """One of THINK_LEVELS for a level a user typed (`off`, `med`, `4`, `max` ...), or None."""
    return _THINK_ALIASES.get((raw or "").strip().lower())


class ModelRef(NamedTuple):
    """A model as `{provider, id}`; str() gives the `provider/id` users type."""

    provider: str
    id: str

    def __str__(self) -> str:
        return f"{self.provider}/{self.id}"


def parse_model_selector(raw: str, fallback_provider: str | None = None) -> ModelRef | None:
    """`provider/model-id` (provider lowercased, the id kept as typed and free to contain
    more slashes) or a bare `model-id` on `fallback_provider`; None when invalid: empty,
    containing whitespace, an empty side, or a bare id with no fallback provider."""
    selector = raw.strip()
    if not selector or _WHITESPACE.search(selector):
        return None
    provider, slash, model_id = selector.partition("/")
    if not slash:
        fallback = (fallback_provider or "").strip().lower()
        return ModelRef(fallback, selector) if fallback else None
    provider = provider.strip().lower()
    return ModelRef(provider, model_id) if provider and model_id else None
