"""Every error shape of the providers gsv speaks, sent with the provider's real body and
headers by the fake LLM server (tests/fakes/provider_errors.py), read by the real SDKs,
and the gsv error each becomes: its class, whether a retry can help, and the wait asked
for. A retryable error is retried (here once) before it is raised; the rest at once."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from gsv_core.errors import ContextOverflow
from gsv_core.errors import GsvError
from gsv_core.errors import ProviderFailed
from gsv_core.errors import RateLimited
from gsv_core.errors import TimedOut
from gsv_core.providers.anthropic import AnthropicProvider
from gsv_core.providers.keys import fingerprint
from gsv_core.providers.openai_compat import OpenAICompatProvider
from gsv_core.providers.sdk import SdkProvider
from tests.fakes import provider_errors as real
from tests.fakes.llm_server import ErrorReply
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import Hang
from tests.fakes.llm_server import Turn
from tests.fakes.llm_server import fake_llm_server
from tests.fakes.llm_server import reply
from tests.providers import ask
from tests.providers import collect
from tests.providers import no_sleep_policy


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with fake_llm_server() as running:
        yield running


def provider(api: str, base_url: str, timeout: float = 10.0) -> tuple[SdkProvider, list[float]]:
    policy, sleep = no_sleep_policy(retries=1)
    kind = AnthropicProvider if api == "anthropic" else OpenAICompatProvider
    made = kind(api, base_url=base_url, api_key="sk-test", llm_timeout=timeout, retry=policy)
    return made, sleep.delays


@dataclass(frozen=True)
class Shape:
    api: str
    turn: Turn
    error: type[GsvError]
    retryable: bool
    waits: list[float]  # what the retry waited: the provider's retry-after when sent
    says: str  # in the message


SHAPES = {
    "anthropic rate_limit_error + retry-after": Shape(
        "anthropic", real.ANTHROPIC_RATE_LIMIT, RateLimited, True, [7.0], "HTTP 429"
    ),
    "anthropic overloaded_error 529": Shape(
        "anthropic", real.ANTHROPIC_OVERLOADED, ProviderFailed, True, [1.0], "overloaded"
    ),
    "anthropic api_error 500": Shape(
        "anthropic", real.ANTHROPIC_API_ERROR, ProviderFailed, True, [1.0], "HTTP 500"
    ),
    "anthropic prompt is too long": Shape(
        "anthropic", real.ANTHROPIC_PROMPT_TOO_LONG, ContextOverflow, False, [], "too long"
    ),
    "anthropic authentication_error 401": Shape(
        "anthropic", real.ANTHROPIC_BAD_KEY, ProviderFailed, False, [], "rejected the API key"
    ),
    "anthropic error event mid-stream": Shape(
        "anthropic",
        reply("Hel", real.ANTHROPIC_STREAM_OVERLOADED),
        ProviderFailed,
        True,
        [],  # text reached the caller: the adapter never replays (the run does, failover.py)
        "overloaded",
    ),
    "openai 429 rate_limit_exceeded + retry-after": Shape(
        "openai", real.OPENAI_RATE_LIMIT, RateLimited, True, [2.0], "HTTP 429"
    ),
    "openrouter 402 insufficient credits": Shape(
        "openai", real.OPENROUTER_NO_CREDIT, ProviderFailed, False, [], "HTTP 402"
    ),
    "openai 429 insufficient_quota": Shape(
        "openai", real.OPENAI_NO_QUOTA, ProviderFailed, False, [], "quota exhausted"
    ),
    "openai context_length_exceeded": Shape(
        "openai", real.OPENAI_CONTEXT_LENGTH, ContextOverflow, False, [], "maximum context"
    ),
    "openai 500 server_error": Shape(
        "openai", real.OPENAI_SERVER_ERROR, ProviderFailed, True, [1.0], "HTTP 500"
    ),
    "openai 502 cloudflare html": Shape(
        "openai", real.OPENAI_BAD_GATEWAY, ProviderFailed, True, [1.0], "HTTP 502"
    ),
    "openai 503 + retry-after": Shape(
        "openai", real.OPENAI_UNAVAILABLE, ProviderFailed, True, [1.0], "HTTP 503"
    ),
    "openai 401 invalid_api_key": Shape(
        "openai", real.OPENAI_BAD_KEY, ProviderFailed, False, [], "rejected the API key"
    ),
    "openai error chunk mid-stream": Shape(
        "openai", reply("Hel", real.OPENAI_STREAM_ERROR), ProviderFailed, True, [], "mid-stream"
    ),
    "anthropic stream cut after deltas": Shape(
        "anthropic", reply("Half", " an", end="aborted"), ProviderFailed, True, [], "ended before"
    ),
    "openai stream cut after deltas": Shape(
        "openai", reply("Half", " an", end="aborted"), ProviderFailed, True, [], "ended before"
    ),
}


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
async def test_each_provider_error_becomes_the_right_gsv_error(
    server: FakeLLMServer, shape: Shape
) -> None:
    """The real body and headers map to the gsv error class, retryability and wait."""
    server.enqueue(shape.turn, shape.turn)
    base = server.anthropic_base_url if shape.api == "anthropic" else server.openai_base_url
    made, waits = provider(shape.api, base)
    with pytest.raises(GsvError) as caught:
        await collect(made, ask())
    error = caught.value
    assert type(error) is shape.error, error.message
    assert error.retryable is shape.retryable
    assert shape.says in error.message
    assert waits == shape.waits
    assert len(server.requests) == 1 + len(shape.waits)
    if shape.waits and shape.turn.headers.get("retry-after"):  # type: ignore[union-attr]
        assert error.details == {"retryAfterMs": round(shape.waits[0] * 1000)}
    assert "sk-test" not in error.message


@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_connection_refused_is_a_retryable_provider_failure(api: str) -> None:
    """Nothing listening is a retryable ProviderFailed raised at once: the next model in
    the chain may answer, waiting on a dead endpoint would not help."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    made, waits = provider(api, f"http://127.0.0.1:{port}" + ("/v1" if api == "openai" else ""))
    with pytest.raises(ProviderFailed, match="cannot reach") as caught:
        await collect(made, ask())
    assert caught.value.retryable and waits == []


@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_read_timeout_is_timed_out_and_retryable(server: FakeLLMServer, api: str) -> None:
    """A provider that accepts the request and never answers is TimedOut (504, retryable),
    not waited for a second time."""
    server.enqueue(Hang(), Hang())
    base = server.anthropic_base_url if api == "anthropic" else server.openai_base_url
    made, waits = provider(api, base, timeout=0.3)
    with pytest.raises(TimedOut) as caught:
        await collect(made, ask())
    assert caught.value.retryable and waits == [] and len(server.requests) == 1


@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_a_server_quoting_the_key_it_refused_never_passes_it_on(
    server: FakeLLMServer, api: str
) -> None:
    """An error message holding the key shows its fingerprint instead."""
    key = "sk-live-0123456789abcdef"
    server.enqueue(ErrorReply(401, f"Incorrect API key provided: {key}"))
    base = server.anthropic_base_url if api == "anthropic" else server.openai_base_url
    kind = AnthropicProvider if api == "anthropic" else OpenAICompatProvider
    made = kind(api, base_url=base, api_key=key, llm_timeout=10.0)
    with pytest.raises(ProviderFailed) as caught:
        await collect(made, ask())
    assert key not in caught.value.message and fingerprint(key) in caught.value.message
