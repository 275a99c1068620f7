"""The chain a model call runs through (docs/models.md, "Fallbacks"): the turn's model
first, then each of its fallbacks in order, until one answers.

The adapters retry what can be retried before anything streamed (retry.py); what is left
is decided here:

* a stream cut after some events (a dropped connection, an `error` event mid-stream) is
  tried once more on the same model, after a `Restart` that voids the events so far;
* a model that still cannot answer (after its retries: overloaded, rate limited, a 5xx,
  unreachable, timed out, a rejected key, no quota, not configured) hands the turn to the
  next model, announced by a `Switched` event saying which and why;
* ContextOverflow is raised at once: compaction mends it, not another model
  (gsv_core/agent/run.py compacts and retries once).

Each wait on a model is bounded by `timeout` (timeouts.llmMs), so one hung model leaves
the rest of the chain its turn.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Sequence
from contextlib import aclosing
from dataclasses import dataclass
from dataclasses import replace

from gsv_core.errors import ContextOverflow
from gsv_core.errors import GsvError
from gsv_core.errors import ProviderFailed
from gsv_core.errors import RateLimited
from gsv_core.errors import TimedOut
from gsv_core.providers.base import ModelRequest
from gsv_core.providers.base import Provider
from gsv_core.providers.base import StreamEvent

log = logging.getLogger(__name__)

# a stream cut after it began is tried again this many times on the same model
CUT_RETRIES = 1


@dataclass(frozen=True)
class Restart:
    """The events since the start (or the last Restart or Switched) are void: the attempt
    that sent them failed and another begins."""

    reason: str


@dataclass(frozen=True)
class Switched:
    """From here on `provider`/`model` answers, because the models before it could not."""

    provider: str
    model: str
    reason: str  # e.g. "alpha-1 overloaded"

    def line(self) -> str:
        """The one line the chat shows: `answered by beta-1: alpha-1 overloaded`."""
        return f"answered by {self.model}: {self.reason}"


FailoverEvent = StreamEvent | Restart | Switched
# (a provider name, whether another model follows it) -> the provider once per key that
# may be tried now, in turn (raises ProviderFailed when it is not configured or every key
# is set aside: providers/keys.py). With a model after it, a provider retries less.
Resolve = Callable[[str, bool], Sequence[Provider]]
# (the provider, with its key, that failed; the error) -> whether the key was set aside,
# so that the provider's next key may answer
KeyFailed = Callable[[Provider, GsvError], Awaitable[bool]]


def failure_reason(error: GsvError) -> str:
    """A few words for why a model could not answer, for the `answered by` line."""
    text = error.message.lower()
    if isinstance(error, RateLimited):
        return "rate limited"
    if isinstance(error, TimedOut):
        return "timed out"
    for words, reason in (
        ("is set aside", "no usable key"),  # providers/keys.py: every key refused lately
        ("overloaded", "overloaded"),
        ("quota", "out of quota"),
        ("http 402", "out of quota"),
        ("rejected the api key", "key rejected"),
        ("refused access", "access refused"),
        ("cannot reach", "unreachable"),
        ("stream ended before", "stream cut"),
        ("no api key", "not configured"),
        ("unknown provider", "not configured"),
        ("404", "model not found"),
    ):
        if words in text:
            return reason
    return "failed"


async def stream_with_failover(
    models: Sequence[tuple[str, str]],
    request: ModelRequest,
    resolve: Resolve,
    timeout: float,
    key_failed: KeyFailed | None = None,
) -> AsyncIterator[FailoverEvent]:
    """The events of the first model of `models` ((provider, model id) pairs) that
    answers `request`, with `Restart` and `Switched` markers (module docstring). A key
    `key_failed` sets aside hands the turn to the provider's next key first."""
    failures: list[tuple[str, GsvError]] = []  # (model id, why it could not answer)
    for index, (provider_name, model_id) in enumerate(models):
        if index:
            why = ", ".join(f"{m} {failure_reason(e)}" for m, e in failures)
            yield Switched(provider_name, model_id, why)
        try:
            async for event in _one_model_keys(
                resolve(provider_name, index + 1 < len(models)),
                replace(request, model=model_id),
                timeout,
                key_failed,
            ):
                yield event
            return
        except ContextOverflow:
            raise
        except (ProviderFailed, RateLimited, TimedOut) as exc:
            failures.append((model_id, exc))
            if index + 1 < len(models):
                log.warning("%s/%s could not answer, trying the next model: %s",
                            provider_name, model_id, exc.message)  # fmt: skip
    raise _chain_failed(failures)


def _chain_failed(failures: list[tuple[str, GsvError]]) -> GsvError:
    if len(failures) == 1:
        return failures[0][1]
    said = "; ".join(f"{model}: {error.message}" for model, error in failures)
    return ProviderFailed(f"no model could answer ({said})")


async def _one_model_keys(
    providers: Sequence[Provider],
    request: ModelRequest,
    timeout: float,
    key_failed: KeyFailed | None,
) -> AsyncIterator[FailoverEvent]:
    """One model's events, through its provider's keys in turn while a key is refused."""
    for number, provider in enumerate(providers, start=1):
        try:
            async for event in _one_model(provider, request, timeout):
                yield event
            return
        except ContextOverflow:
            raise
        except (ProviderFailed, RateLimited, TimedOut) as exc:
            set_aside = key_failed is not None and await key_failed(provider, exc)
            if not set_aside or number == len(providers):
                raise
            log.info("%s: trying its next API key", provider.name)


async def _one_model(
    provider: Provider, request: ModelRequest, timeout: float
) -> AsyncIterator[FailoverEvent]:
    """One model's events; a stream cut after it began is tried again (CUT_RETRIES)."""
    cuts = 0
    while True:
        began = False
        try:
            async for event in _bounded(provider.stream(request), timeout):
                began = True
                yield event
            return
        except ContextOverflow:
            raise
        except (ProviderFailed, RateLimited, TimedOut) as exc:
            if not began:
                raise
            yield Restart(exc.message)  # what it streamed is void, whatever comes next
            # a stalled stream already took a whole timeouts.llmMs: not waited for again
            if not exc.retryable or isinstance(exc, TimedOut) or cuts >= CUT_RETRIES:
                raise
            cuts += 1
            log.info("%s: %s; trying the turn again", provider.name, exc.message)


async def _bounded(
    events: AsyncIterator[StreamEvent], timeout: float
) -> AsyncIterator[StreamEvent]:
    """`events`, each wait for the next one inside one deadline `timeout` s from now.
    Only the waits on the provider count, never the caller's time between events."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    async with aclosing(_generator(events)) as stream:
        while True:
            try:
                async with asyncio.timeout_at(deadline):
                    event = await anext(stream)
            except StopAsyncIteration:
                return
            except TimeoutError:
                raise TimedOut(
                    f"The model did not finish within {timeout:g}s (timeouts.llmMs)."
                ) from None
            yield event


async def _generator(events: AsyncIterator[StreamEvent]) -> AsyncGenerator[StreamEvent, None]:
    """`events` as an async generator, so that closing it closes the provider's stream."""
    close = getattr(events, "aclose", None)
    try:
        async for event in events:
            yield event
    finally:
        if close is not None:
            await close()
