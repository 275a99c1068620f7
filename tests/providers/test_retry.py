"""Retry policy and retry-after parsing, and the rule that a started stream is never replayed."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from collections.abc import Callable

import pytest

from gsv_core.errors import ProviderFailed
from gsv_core.errors import RateLimited
from gsv_core.providers.base import StreamEvent
from gsv_core.providers.base import TextDelta
from gsv_core.providers.retry import AttemptFailed
from gsv_core.providers.retry import RetryPolicy
from gsv_core.providers.retry import cause_text
from gsv_core.providers.retry import is_loopback_url
from gsv_core.providers.retry import looks_like_overflow
from gsv_core.providers.retry import refused
from gsv_core.providers.retry import retry_after
from gsv_core.providers.retry import stream_with_retries
from tests.providers import no_sleep_policy

NOW = 1_700_000_000.0  # 2023-11-14T22:13:20Z


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "Tue, 14 Nov 2023 22:13:30 GMT"}, 10.0),
        ({"retry-after": "Tue, 14 Nov 2023 22:13:00 GMT"}, 0.0),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_reads_seconds_milliseconds_and_http_dates(
    headers: dict[str, str], seconds: float | None
) -> None:
    """retry-after-ms wins; retry-after is seconds or an HTTP date; garbage means no hint."""
    assert retry_after(headers, now=lambda: NOW) == seconds


def test_backoff_doubles_and_stops_at_the_bounds() -> None:
    """Without a hint the wait doubles; retries, a single long wait and the total are bounded."""
    policy = RetryPolicy(
        retries=3, base_delay=1.0, max_delay=30.0, max_total_wait=5.0, jitter=lambda: 0.0
    )
    assert [policy.delay_before(n, None, 0.0) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, None]
    assert policy.delay_before(1, 31.0, 0.0) is None
    assert policy.delay_before(2, 3.0, 3.0) is None


async def test_a_failure_after_the_first_event_is_not_retried() -> None:
    """Once an event reached the caller the failure is raised, never retried and replayed."""
    policy, sleep = no_sleep_policy()
    attempts = 0

    async def attempt() -> AsyncGenerator[StreamEvent, None]:
        nonlocal attempts
        attempts += 1
        yield TextDelta("partial")
        raise AttemptFailed(ProviderFailed("upstream broke"))

    seen = []
    with pytest.raises(ProviderFailed, match="upstream broke"):
        async for event in stream_with_retries(attempt, policy):
            seen.append(event)
    assert (attempts, seen, sleep.delays) == (1, [TextDelta("partial")], [])


async def test_failures_before_any_event_are_retried_until_success() -> None:
    """Failures before anything was yielded are retried with the provider's own delay."""
    policy, sleep = no_sleep_policy()
    outcomes = [RateLimited("busy"), RateLimited("busy"), None]

    async def attempt() -> AsyncGenerator[StreamEvent, None]:
        error = outcomes.pop(0)
        if error:
            raise AttemptFailed(error, delay=0.1)
        yield TextDelta("done")

    assert [e async for e in stream_with_retries(attempt, policy)] == [TextDelta("done")]
    assert sleep.delays == [0.1, 0.1]


@pytest.mark.parametrize(
    "message",
    [
        "This model's maximum context length is 128000 tokens. However, you requested 130000",
        "prompt is too long: 208310 tokens > 200000 maximum",
        "The input token count (1100000) exceeds the maximum number of tokens allowed (1048576).",
    ],
)
def test_overflow_wordings_of_the_providers_are_recognised(message: str) -> None:
    """OpenAI, Anthropic and Gemini context-window errors are all recognised."""
    assert looks_like_overflow(message)


def test_other_errors_are_not_mistaken_for_overflow() -> None:
    """An unrelated 400 message is not a context overflow."""
    assert not looks_like_overflow("max_tokens: 40960 > 32000, which is the maximum allowed")


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://127.0.0.1:11434/v1", True),
        ("http://localhost:1234/v1", True),
        ("http://[::1]:8000", True),
        ("https://api.openai.com/v1", False),
        ("http://192.168.1.5:11434/v1", False),
    ],
)
def test_loopback_urls_are_recognised(url: str, loopback: bool) -> None:
    """127.0.0.0/8, ::1 and localhost are loopback; anything else is not."""
    assert is_loopback_url(url) is loopback


def _raised(make: Callable[[], None]) -> BaseException:
    try:
        make()
    except BaseException as exc:  # the chain is what is tested
        return exc
    raise AssertionError("nothing was raised")


def test_cause_text_skips_an_optional_import_that_failed_on_the_way() -> None:
    """A connection error raised while a library handled its failed `import uvloop` reads
    as the connection error, not as "No module named 'uvloop'"."""

    def connect() -> None:
        try:
            try:
                raise ModuleNotFoundError("No module named 'uvloop'")
            except ImportError:
                raise OSError("All connection attempts failed") from None
        except OSError as exc:
            raise RuntimeError("Connection error.") from exc

    def connect_in_handler() -> None:
        try:
            try:
                raise ModuleNotFoundError("No module named 'uvloop'")
            except ImportError:
                raise OSError("All connection attempts failed")  # noqa: B904 - on purpose
        except OSError as exc:
            raise RuntimeError("Connection error.") from exc

    assert cause_text(_raised(connect)) == "All connection attempts failed"
    assert cause_text(_raised(connect_in_handler)) == "All connection attempts failed"


def test_cause_text_follows_causes_and_context_but_not_a_suppressed_context() -> None:
    def wrapped() -> None:
        try:
            raise ConnectionRefusedError("[Errno 111] Connection refused")
        except OSError as exc:
            raise RuntimeError("Connection error.") from exc

    def suppressed() -> None:
        try:
            raise KeyError("internal detail")
        except KeyError:
            raise RuntimeError("Connection error.") from None

    assert cause_text(_raised(wrapped)) == "[Errno 111] Connection refused"
    assert cause_text(_raised(suppressed)) == "Connection error."
    assert cause_text(_raised(lambda: (_ for _ in ()).throw(ValueError()))) == "ValueError"


def _timeout_from(cause: BaseException) -> BaseException:
    """A timeout raised over `cause`, as the SDK and its transport chain them."""

    def timed_out() -> None:
        try:
            raise cause
        except BaseException as exc:
            raise TimeoutError("Request timed out.") from exc

    return _raised(timed_out)


def test_a_timeout_over_a_refused_connection_is_refused_not_a_wait() -> None:
    """The SDKs' aiohttp transport names a refused connection a connect timeout: the
    OS error under it says what happened. A real timeout under it stays a timeout."""
    assert refused(_timeout_from(ConnectionRefusedError(111, "Connection refused")))
    assert refused(_timeout_from(OSError(113, "No route to host")))
    assert not refused(_timeout_from(TimeoutError("timed out")))
    assert not refused(_raised(lambda: (_ for _ in ()).throw(TimeoutError("read timed out"))))
    assert not refused(_raised(lambda: (_ for _ in ()).throw(ValueError("bad json"))))


def test_a_cause_chain_that_loops_is_read_to_an_end() -> None:
    first, second = RuntimeError("one"), RuntimeError("two")
    first.__cause__, second.__cause__ = second, first
    assert cause_text(first) in {"one", "two"}
    assert refused(first) is False
