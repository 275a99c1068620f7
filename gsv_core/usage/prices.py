"""Prices of model calls in USD per million tokens, and the cost of one call.

Built-in prices cover the common hosted models (list prices of their providers; a
model id matches the longest listed prefix, after any `vendor/` of routers such as
OpenRouter). Config `pricing.<model id>` = `{input, output, cacheRead?, cacheWrite?}`
overrides or adds one, e.g. `{input: 0, output: 0}` for a local model. A model with no
price costs `None`: its tokens are counted, its cost is never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gsv_core.protocol.messages import Usage

PER = 1_000_000  # prices are per million tokens


@dataclass(frozen=True)
class Price:
    input: float
    output: float
    cache_read: float | None = None  # None: as input
    cache_write: float | None = None

    def cost(self, usage: Usage) -> float:
        """USD for `usage`, whose input counts cache reads and writes too."""
        read, write = usage.get("cacheRead", 0), usage.get("cacheWrite", 0)
        plain = max(0, usage.get("input", 0) - read - write)
        total = (
            plain * self.input
            + read * _or(self.cache_read, self.input)
            + write * _or(self.cache_write, self.input)
            + usage.get("output", 0) * self.output
        )
        return total / PER


def _or(value: float | None, fallback: float) -> float:
    return fallback if value is None else value


BUILTIN: dict[str, Price] = {
    # Anthropic: cache reads 0.1x input, cache writes (5-minute) 1.25x input
    "claude-opus-4-5": Price(5, 25, 0.5, 6.25),
    "claude-opus-4": Price(15, 75, 1.5, 18.75),
    "claude-sonnet-4": Price(3, 15, 0.3, 3.75),
    "claude-3-7-sonnet": Price(3, 15, 0.3, 3.75),
    "claude-3-5-sonnet": Price(3, 15, 0.3, 3.75),
    "claude-haiku-4-5": Price(1, 5, 0.1, 1.25),
    "claude-3-5-haiku": Price(0.8, 4, 0.08, 1),
    # OpenAI: cached input at its listed rate, no charge for writing the cache
    "gpt-5-nano": Price(0.05, 0.4, 0.005),
    "gpt-5-mini": Price(0.25, 2, 0.025),
    "gpt-5": Price(1.25, 10, 0.125),
    "gpt-4.1-nano": Price(0.1, 0.4, 0.025),
    "gpt-4.1-mini": Price(0.4, 1.6, 0.1),
    "gpt-4.1": Price(2, 8, 0.5),
    "gpt-4o-mini": Price(0.15, 0.6, 0.075),
    "gpt-4o": Price(2.5, 10, 1.25),
    "o4-mini": Price(1.1, 4.4, 0.275),
    "o3-mini": Price(1.1, 4.4, 0.55),
    "o3": Price(2, 8, 0.5),
    # Google Gemini (prompts up to 200k tokens)
    "gemini-2.5-pro": Price(1.25, 10, 0.31),
    "gemini-2.5-flash-lite": Price(0.1, 0.4, 0.025),
    "gemini-2.5-flash": Price(0.3, 2.5, 0.075),
}


def price_of(model: str, config: dict[str, Any]) -> Price | None:
    """The price of `model`: config `pricing` first (exact id), then the built-in table."""
    configured = (config.get("pricing") or {}).get(model)
    if isinstance(configured, dict):
        return _configured(configured)
    name = model.rsplit("/", 1)[-1]  # "anthropic/claude-sonnet-4" on OpenRouter
    matches = [prefix for prefix in BUILTIN if name.startswith(prefix)]
    return BUILTIN[max(matches, key=len)] if matches else None


def _configured(entry: dict[str, Any]) -> Price:
    return Price(
        float(entry["input"]),
        float(entry["output"]),
        _optional(entry.get("cacheRead")),
        _optional(entry.get("cacheWrite")),
    )


def _optional(value: Any) -> float | None:
    return None if value is None else float(value)


def cost_of(model: str, usage: Usage, config: dict[str, Any]) -> float | None:
    price = price_of(model, config)
    return None if price is None else round(price.cost(usage), 8)
