"""Providers kept between turns (gsv_core/providers/pool.py): one SDK client serves every
call until the settings change, and a provider let go of never loses a stream in flight."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gsv_core.providers.base import TextDelta
from gsv_core.providers.pool import ProviderPool
from gsv_core.providers.retry import RetryPolicy
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import fake_llm_server
from tests.fakes.llm_server import reply
from tests.providers import NoSleep
from tests.providers import ask

POLICY = RetryPolicy(sleep=NoSleep(), jitter=lambda: 0.0)


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with fake_llm_server() as running:
        yield running


def config_for(server: FakeLLMServer) -> dict[str, Any]:
    return {"providers": {"fake": {"api": "openai", "baseUrl": server.openai_base_url}}}


async def texts(provider: Any) -> str:
    return "".join([e.text async for e in provider.stream(ask()) if isinstance(e, TextDelta)])


async def test_the_same_settings_give_the_same_provider_and_new_settings_a_new_one(
    server: FakeLLMServer,
) -> None:
    """Kept under everything it was built from: URL, timeout, retry policy."""
    pool = ProviderPool()
    first = pool.get(config_for(server), "fake", llm_timeout=10, retry=POLICY)
    assert pool.get(config_for(server), "fake", llm_timeout=10, retry=POLICY) is first
    assert pool.get(config_for(server), "fake", llm_timeout=20, retry=POLICY) is not first
    with fake_llm_server() as other:
        moved = pool.get(config_for(other), "fake", llm_timeout=10, retry=POLICY)
        assert moved is not first and moved.base_url == other.openai_base_url
    await pool.close()


async def test_a_kept_provider_answers_call_after_call(server: FakeLLMServer) -> None:
    """The one client it keeps serves several streams in turn."""
    pool = ProviderPool()
    provider = pool.get(config_for(server), "fake", llm_timeout=10, retry=POLICY)
    for word in ("one", "two", "three"):
        server.enqueue(reply(word))
        assert await texts(provider) == word
    assert len(server.requests) == 3
    await pool.close()


async def test_a_provider_let_go_of_mid_stream_finishes_its_stream(server: FakeLLMServer) -> None:
    """clear() while a stream is being read: the stream still ends normally."""
    pool = ProviderPool()
    provider = pool.get(config_for(server), "fake", llm_timeout=10, retry=POLICY)
    server.enqueue(reply("Hel", "lo"))
    stream = provider.stream(ask())
    first = await anext(stream)  # type: ignore[call-overload]
    pool.clear()
    rest = [event async for event in stream]  # type: ignore[attr-defined]
    words = [e.text for e in (first, *rest) if isinstance(e, TextDelta)]
    assert "".join(words) == "Hello"
    assert pool.get(config_for(server), "fake", llm_timeout=10, retry=POLICY) is not provider
    await pool.close()


async def test_an_unknown_provider_is_refused_as_before() -> None:
    """The pool resolves names as resolve_provider does: a clear error for a bad name."""
    from gsv_core.providers.registry import ProviderNotConfigured

    with pytest.raises(ProviderNotConfigured, match='unknown provider "nope"'):
        ProviderPool().get({}, "nope", llm_timeout=10, retry=POLICY)


async def test_a_stream_begun_just_after_the_provider_was_let_go_of_is_not_closed_under(
    server: FakeLLMServer,
) -> None:
    """A run holds the provider it got at the start of its step (compaction uses it later)
    while the config changes: clear() finds it idle and schedules its close, and the run's
    call begins before that close runs. The close must wait for that stream, not cut it."""
    pool = ProviderPool()
    no_retry = RetryPolicy(retries=0, sleep=NoSleep(), jitter=lambda: 0.0)
    provider = pool.get(config_for(server), "fake", llm_timeout=10, retry=no_retry)
    server.enqueue(reply("Hel", "lo", delay=0.05))
    pool.clear()  # idle now: its close is scheduled
    assert await texts(provider) == "Hello"
    await pool.close()
