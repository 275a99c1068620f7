"""Bad values for the config keys this wave added are refused with a 400 naming the key,
and nothing is stored."""

from __future__ import annotations

import pytest

from gsv_core.client import GatewayClient
from gsv_core.errors import InvalidParams


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        ("pricing", {"claude-x": {"input": -1, "output": 1}}, "pricing"),
        ("pricing", {"claude-x": {"output": 1}}, "input"),
        ("pricing", {"claude-x": {"input": "3", "output": 1}}, "input"),
        ("usage.retentionDays", 0, "retentionDays"),
        ("tools.inlineLimit", 0, "inlineLimit"),
        ("agents.maxConcurrentSpawns", 0, "maxConcurrentSpawns"),
        ("webFetch.maxBytes", 0, "maxBytes"),
        ("webFetch.timeoutMs", 10, "timeoutMs"),
        ("providers.local", {"baseUrl": "http://127.0.0.1:1/v1", "promptCacheKey": "yes"},
         "promptCacheKey"),
    ],
)  # fmt: skip
async def test_bad_values_are_refused_and_not_stored(
    client: GatewayClient, path: str, value: object, named: str
) -> None:
    before = await client.call("config.get", {"path": path})
    with pytest.raises(InvalidParams, match=named):
        await client.call("config.set", {"path": path, "value": value})
    assert await client.call("config.get", {"path": path}) == before
