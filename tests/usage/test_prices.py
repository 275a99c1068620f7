"""Price table math: per-million prices, cache reads and writes at their own rates,
the longest matching model prefix, routers' vendor prefixes, config overrides, and no
guess for an unknown model."""

from __future__ import annotations

import pytest

from gsv_core.protocol.messages import Usage
from gsv_core.usage.prices import BUILTIN
from gsv_core.usage.prices import Price
from gsv_core.usage.prices import cost_of
from gsv_core.usage.prices import price_of


def usage(input_: int, output: int, read: int = 0, write: int = 0) -> Usage:
    result: Usage = {"input": input_, "output": output, "total": input_ + output}
    if read:
        result["cacheRead"] = read
    if write:
        result["cacheWrite"] = write
    return result


def test_input_output_and_cache_are_each_priced_at_their_rate() -> None:
    """1M input of which 600k read and 100k written: 300k plain input."""
    price = Price(input=3, output=15, cache_read=0.3, cache_write=3.75)
    cost = price.cost(usage(1_000_000, 200_000, read=600_000, write=100_000))
    assert cost == pytest.approx(0.3 * 3 + 0.6 * 0.3 + 0.1 * 3.75 + 0.2 * 15)


def test_cache_rates_default_to_the_input_rate() -> None:
    price = Price(input=2, output=8)
    assert price.cost(usage(500_000, 0, read=500_000)) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("model", "prefix"),
    [
        ("claude-sonnet-4-20250514", "claude-sonnet-4"),
        ("claude-opus-4-5-20251101", "claude-opus-4-5"),  # not the older opus-4 price
        ("claude-opus-4-1-20250805", "claude-opus-4"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),  # not gpt-4o
        ("anthropic/claude-sonnet-4", "claude-sonnet-4"),  # an OpenRouter id
        ("gemini-2.5-flash-lite", "gemini-2.5-flash-lite"),
    ],
)
def test_a_model_takes_the_longest_matching_prefix(model: str, prefix: str) -> None:
    assert price_of(model, {}) == BUILTIN[prefix]


def test_an_unknown_model_has_no_cost_never_a_guess() -> None:
    assert price_of("llama3.1:8b", {}) is None
    assert cost_of("llama3.1:8b", usage(1000, 1000), {}) is None


def test_config_pricing_overrides_and_adds_models() -> None:
    config = {"pricing": {"llama3.1:8b": {"input": 0, "output": 0},
                          "claude-sonnet-4-20250514": {"input": 1, "output": 2}}}  # fmt: skip
    assert cost_of("llama3.1:8b", usage(1000, 1000), config) == 0
    assert cost_of("claude-sonnet-4-20250514", usage(1_000_000, 1_000_000), config) == 3
