"""KeyPool over a real SQLite database: which keys may be tried, how long a refused key
stays set aside, and that the marks are read back by a new pool."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gsv_core.errors import ProviderFailed
from gsv_core.errors import RateLimited
from gsv_core.providers.keys import QUOTA_COOLDOWN_MS
from gsv_core.providers.keys import RATE_LIMIT_COOLDOWN_MS
from gsv_core.providers.keys import KeyPool
from gsv_core.providers.keys import fingerprint
from gsv_core.storage.db import Database
from gsv_core.storage.provider_keys import ProviderKeyStore

KEYS = ["sk-a-1111", "sk-b-2222"]


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    opened = await Database.open(tmp_path / "gsv.db")
    yield opened
    await opened.close()


async def test_a_rate_limited_key_comes_back_after_its_retry_after(db: Database) -> None:
    """The provider's retry-after is the cooldown; without one, a minute."""
    clock = Clock()
    pool = KeyPool(ProviderKeyStore(db), clock)
    hinted = RateLimited("slow down", details={"retryAfterMs": 5000})
    assert await pool.report("openai", KEYS[0], hinted)
    assert pool.usable("openai", KEYS) == [KEYS[1]]
    clock.ms += 5000
    assert pool.usable("openai", KEYS) == KEYS
    assert await pool.report("openai", KEYS[0], RateLimited("slow down"))
    assert pool.status()[0]["until"] == clock.ms + RATE_LIMIT_COOLDOWN_MS


@pytest.mark.parametrize(
    ("message", "cooldown"),
    [
        ("openai refused the request: quota exhausted (You exceeded your current quota)",
         QUOTA_COOLDOWN_MS),
        ("openrouter refused the request (HTTP 402: Insufficient credits)", QUOTA_COOLDOWN_MS),
    ],
)  # fmt: skip
async def test_no_quota_or_credit_cools_down_for_a_day(
    db: Database, message: str, cooldown: int
) -> None:
    """insufficient_quota and 402 set the key aside for a day."""
    clock = Clock()
    pool = KeyPool(ProviderKeyStore(db), clock)
    assert await pool.report("openai", KEYS[0], ProviderFailed(message, retryable=False))
    [mark] = pool.status()
    assert (mark["reason"], mark["until"] - mark["since"]) == ("out of quota", cooldown)


async def test_errors_not_about_the_key_leave_it_alone(db: Database) -> None:
    """An overloaded provider or a cut stream says nothing about the key."""
    pool = KeyPool(ProviderKeyStore(db), Clock())
    assert not await pool.report("openai", KEYS[0], ProviderFailed("openai is overloaded"))
    assert pool.usable("openai", KEYS) == KEYS


async def test_a_rejected_key_stays_aside_across_pools_until_cleared(db: Database) -> None:
    """A 401 mark outlives the pool (a restart) and time; clearing the provider ends it.
    With every key aside, the error names them by fingerprint only."""
    clock = Clock()
    pool = KeyPool(ProviderKeyStore(db), clock)
    for key in KEYS:
        rejected = ProviderFailed("openai rejected the API key (HTTP 401: bad)", retryable=False)
        await pool.report("openai", key, rejected)
    again = KeyPool(ProviderKeyStore(db), clock)
    await again.load()
    clock.ms += 10 * QUOTA_COOLDOWN_MS
    with pytest.raises(ProviderFailed) as caught:
        again.usable("openai", KEYS)
    assert fingerprint(KEYS[0]) in caught.value.message
    assert not any(key in caught.value.message for key in KEYS)
    await again.clear("openai")
    third = KeyPool(ProviderKeyStore(db), clock)
    await third.load()
    assert third.usable("openai", KEYS) == KEYS


def test_config_changes_to_keys_clear_only_that_provider() -> None:
    """`apiKeys.openai`, `providers.openai.apiKey` and their parents clear; others do not."""
    pool = KeyPool(ProviderKeyStore(None), Clock())  # type: ignore[arg-type]
    assert pool.config_changed("model.id") is None
    assert pool.config_changed("providers.openai.baseUrl") is None
    for path in ("apiKeys.openai", "providers.openai.apiKey", "apiKeys", "providers.openai"):
        clearing = pool.config_changed(path)
        assert clearing is not None
        clearing.close()  # not awaited: the store is not needed for the decision
