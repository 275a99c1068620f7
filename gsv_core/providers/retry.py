"""What both provider adapters share at the network edge: the HTTP client an SDK gets, the
retry policy (bounded backoff honouring `retry-after`), and the gsv error each kind of
failure becomes, worded for the person who has to fix it.

A retry only happens before the first stream event reached the caller: a half-streamed
answer is never replayed. The sleep and the clock are injectable so tests never wait.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import json
import logging
import random
import re
import time
from collections.abc import AsyncGenerator
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any
from urllib.parse import urlsplit

from gsv_core.errors import ContextOverflow
from gsv_core.errors import GsvError
from gsv_core.errors import ProviderFailed
from gsv_core.errors import RateLimited
from gsv_core.errors import TimedOut
from gsv_core.loopback import is_loopback
from gsv_core.providers.sse import StreamTooLong

if TYPE_CHECKING:
    import ssl

    import httpx2

    from gsv_core.providers.base import StreamEvent

log = logging.getLogger(__name__)

# Wordings providers use for "the prompt does not fit the context window".
_OVERFLOW = re.compile(
    r"context[_ ]length|context window|maximum context|prompt is too long|too many tokens"
    r"|input token count.*exceeds|input is too long",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries for rate limits and server errors.

    `retry-after` is honoured when the provider sends it; otherwise the wait doubles from
    `base_delay`, with jitter. A single wait longer than `max_delay`, or waits adding up
    to more than `max_total_wait`, end the retries at once.
    """

    retries: int = 3
    base_delay: float = 1.0
    max_delay: float = 30.0
    max_total_wait: float = 60.0
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    now: Callable[[], float] = time.time  # wall clock, for HTTP-date retry-after values
    jitter: Callable[[], float] = random.random  # in [0, 1)

    def delay_before(self, attempt: int, hinted: float | None, waited: float) -> float | None:
        """Seconds to wait before attempt number `attempt + 1`, or None to give up."""
        if attempt > self.retries:
            return None
        if hinted is not None:
            delay = hinted
        else:
            delay = self.base_delay * 2 ** (attempt - 1) * (1 - 0.25 * self.jitter())
        if delay > self.max_delay or waited + delay > self.max_total_wait:
            return None
        return delay


class AttemptFailed(Exception):
    """An attempt failed in a way a later attempt may not (rate limit, server error).

    Adapters raise it; `stream_with_retries` retries or raises `error`. `delay` is the
    provider's own retry-after, in seconds, when it sent one.
    """

    def __init__(self, error: GsvError, delay: float | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.delay = delay


async def stream_with_retries(
    attempt: Callable[[], AsyncGenerator[StreamEvent, None]], policy: RetryPolicy
) -> AsyncIterator[StreamEvent]:
    """The events of `attempt()`, retried per `policy` while nothing has been yielded."""
    waited = 0.0
    number = 1
    while True:
        yielded = False
        try:
            async with aclosing(attempt()) as events:
                async for event in events:
                    yielded = True
                    yield event
            return
        except AttemptFailed as failed:
            delay = None if yielded else policy.delay_before(number, failed.delay, waited)
            if delay is None:
                raise _final_error(failed, number) from failed.__cause__
            log.info("%s; retrying in %.1f s", failed.error.message, delay)
        await policy.sleep(delay)
        waited += delay
        number += 1


def _final_error(failed: AttemptFailed, attempts: int) -> GsvError:
    error = failed.error
    notes = []
    if attempts > 1:
        notes.append(f"gave up after {attempts} attempts")
    if failed.delay is not None:
        notes.append(f"the provider asks to retry after {failed.delay:g} s")
    if not notes:
        return error
    details = {"retryAfterMs": round(failed.delay * 1000)} if failed.delay is not None else None
    return type(error)(f"{error.message} ({'; '.join(notes)})", details=details)


def retry_after(headers: Mapping[str, str], now: Callable[[], float] = time.time) -> float | None:
    """The wait a response asks for: `retry-after-ms`, or `retry-after` in seconds or as
    an HTTP date. None when absent or unreadable."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now())


def looks_like_overflow(text: str) -> bool:
    """Whether an error message says the prompt exceeds the model's context window."""
    return bool(_OVERFLOW.search(text))


# HTTP statuses no retry can mend, worded with what the person should check
_REFUSALS = {
    401: "{provider} rejected the API key (HTTP 401: {detail}); set a valid one with "
    "gsv config set apiKeys.{provider} NEW_KEY",
    403: "{provider} refused access (HTTP 403: {detail}); check that the API key may "
    "use this model",
    404: "{provider} answered 404 not found ({detail}); check model.id and "
    "providers.{provider}.baseUrl",
}


def status_failure(provider: str, status: int, detail: str, delay: float | None) -> Exception:
    """The error for an HTTP error status: AttemptFailed where a retry can help."""
    refusal = _REFUSALS.get(status)
    if refusal is not None:
        return ProviderFailed(refusal.format(provider=provider, detail=detail), retryable=False)
    if status == 429:
        return AttemptFailed(
            RateLimited(f"{provider} is rate limiting requests (HTTP 429: {detail})"), delay
        )
    if status == 529:
        return AttemptFailed(
            ProviderFailed(f"{provider} is overloaded (HTTP 529: {detail})"), delay
        )
    if status in (408, 409) or status >= 500:
        return AttemptFailed(ProviderFailed(f"{provider} failed (HTTP {status}: {detail})"), delay)
    return ProviderFailed(
        f"{provider} refused the request (HTTP {status}: {detail})", retryable=False
    )


def overflow(provider: str, detail: str) -> ContextOverflow:
    return ContextOverflow(f"the conversation is too long for the model ({provider}: {detail})")


def unreachable(provider: str, base_url: str, reason: str) -> ProviderFailed:
    return ProviderFailed(f"cannot reach {provider} at {base_url}: {reason}")


def timed_out(provider: str, seconds: float) -> TimedOut:
    return TimedOut(f"{provider} did not answer within {seconds:g} s (timeouts.llmMs)")


def truncated(provider: str, reason: str = "") -> ProviderFailed:
    suffix = f" ({reason})" if reason else ""
    return ProviderFailed(f"{provider} stream ended before the response was complete{suffix}")


def malformed(provider: str, what: str) -> ProviderFailed:
    return ProviderFailed(f"malformed stream from {provider}: {what}")


def malformed_reason(exc: Exception) -> str:
    """Why a stream event could not be read, for a `malformed` error."""
    if isinstance(exc, json.JSONDecodeError):
        return f"an event is not valid JSON ({exc.msg})"
    if isinstance(exc, StreamTooLong):
        return str(exc)
    return f"an event lacks an expected field ({short(str(exc), 200)})"


def _chain(exc: BaseException, limit: int = 10) -> Iterator[BaseException]:
    """`exc` and what caused it, as cause_text follows them."""
    current: BaseException | None = exc
    while current is not None and limit > 0:
        yield current
        limit -= 1
        current = current.__cause__ or (
            None if current.__suppress_context__ else current.__context__
        )


def refused(exc: BaseException) -> bool:
    """Whether a timeout was a connection that failed at once: an OS error other than a
    timeout in its chain (the SDKs' aiohttp transport reports a refused connection as a
    connect timeout; waiting longer would not have helped)."""
    return any(
        isinstance(link, OSError) and not isinstance(link, TimeoutError) for link in _chain(exc)
    )


def cause_text(exc: BaseException) -> str:
    """The most specific readable reason in an exception chain (the SDKs wrap httpx's
    errors in a bare "Connection error."). An exception met while handling another is
    followed too, unless the code said it was not the cause (`raise ... from None`), but
    never an ImportError: a library that tried an optional module (`import uvloop`) and
    failed over meanwhile is not why the model could not be reached."""
    reasons: list[str] = []
    for link in _chain(exc):
        text = str(link).strip()
        if text and text not in reasons and not isinstance(link, ImportError):
            reasons.append(text)
            if len(reasons) == 5:
                break
    return reasons[-1] if reasons else type(exc).__name__


def short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


@functools.lru_cache(maxsize=64)  # asked of the same few base URLs on every model call
def is_loopback_url(url: str) -> bool:
    return is_loopback(urlsplit(url).hostname or "")


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    import httpx2

    return httpx2.create_ssl_context()


def http_client(
    default_client: Callable[..., Any], base_url: str, timeout: float
) -> httpx2.AsyncClient:
    """The HTTP client for one SDK client.

    `default_client` is the SDK's `DefaultAioHttpClient`: its documented aiohttp
    transport under the same httpx interface, with the SDK's limits, redirects and
    keep-alive settings. It costs the loop about a tenth less CPU per model call than
    httpx's own (bench/turn_ab.py); a refused connection it reports as a timeout, which
    `SdkProvider._failure` tells apart.
    Loading the CA bundle costs about 20 ms, so one TLS context is shared by every client
    (the SDKs would build a new one each time), plain http:// included. For a loopback
    URL the proxy variables are ignored: httpx would otherwise send 127.0.0.1 through
    `http_proxy` as well.
    """
    client: httpx2.AsyncClient = default_client(
        timeout=timeout, verify=_ssl_context(), trust_env=not is_loopback_url(base_url)
    )
    return client
