"""What the two official-SDK providers (anthropic.py, openai_compat.py) share: their
settings, the retry loop around one attempt, and reading the SDK's raw stream through a
reader that turns each raw event into gsv stream events.

A subclass says how a request becomes the SDK's arguments (`request_params`), how one
attempt is made (`_attempt`), which SDK it uses (`_sdk`) and which gsv error the server's
error status becomes (`_status_failure`); timeouts and broken connections are told apart
here (`_failure`), as both SDKs name their exception classes alike.
"""

from __future__ import annotations

from abc import ABC
from abc import abstractmethod
from collections.abc import AsyncGenerator
from collections.abc import AsyncIterable
from collections.abc import AsyncIterator
from collections.abc import Iterable
from contextlib import aclosing
from dataclasses import KW_ONLY
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import Protocol

from gsv_core.errors import GsvError
from gsv_core.errors import ProviderFailed
from gsv_core.providers.base import ModelRequest
from gsv_core.providers.base import StreamEvent
from gsv_core.providers.retry import RetryPolicy
from gsv_core.providers.retry import cause_text
from gsv_core.providers.retry import http_client
from gsv_core.providers.retry import malformed
from gsv_core.providers.retry import malformed_reason
from gsv_core.providers.retry import refused
from gsv_core.providers.retry import short
from gsv_core.providers.retry import stream_with_retries
from gsv_core.providers.retry import timed_out
from gsv_core.providers.retry import truncated
from gsv_core.providers.retry import unreachable
from gsv_core.providers.tool_call_modes import NATIVE
from gsv_core.providers.tool_call_modes import TEXT
from gsv_core.providers.tool_call_modes import adapt_request
from gsv_core.providers.tool_call_modes import text_calls


def sdk_client(
    client_class: Any, httpx_client_class: Any, api_key: str, base_url: str,
    timeout: float,
) -> Any:  # fmt: skip
    """A `client_class` (an SDK's async client) for `base_url` with `api_key` and
    `timeout`, over our HTTP client (retry.http_client); it never retries itself
    (stream_with_retries decides). bench/floors.py measures one built here."""
    return client_class(
        api_key=api_key,
        base_url=base_url,
        timeout=timeout,
        max_retries=0,
        http_client=http_client(httpx_client_class, base_url, timeout),
    )


class StreamReader(Protocol):
    """Turns an SDK's raw stream events into gsv stream events, one attempt long."""

    def feed(self, raw: Any) -> list[StreamEvent]: ...

    def finish(self) -> list[StreamEvent]:
        """The closing events; raises when the stream was cut short."""
        ...


@dataclass(eq=False)
class SdkProvider(ABC):
    """A provider reached through an official SDK at `base_url`; `llm_timeout` (seconds)
    bounds each wait on it."""

    name: str
    _: KW_ONLY
    base_url: str
    api_key: str
    llm_timeout: float
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    # send the conversation's cache key where the API takes one (OpenAI's
    # prompt_cache_key); Anthropic marks cache breakpoints instead and ignores this
    prompt_cache_key: bool = False
    # native | text | off: how the model is given tools (tool_call_modes.py)
    tool_calls: str = NATIVE
    # one SDK client (and its HTTP connections) for every attempt until `close()`, for a
    # provider kept between turns (providers/pool.py); else a client per attempt
    keep_client: bool = False
    _client: Any = field(default=None, init=False, repr=False)
    _in_use: int = field(default=0, init=False, repr=False)  # attempts on `_client`
    _retired: bool = field(default=False, init=False, repr=False)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        events = self._stream(adapt_request(request, self.tool_calls))
        if self.tool_calls == TEXT:
            events = text_calls(events, [tool.name for tool in request.tools])
        async with aclosing(events) as closing:
            async for event in closing:
                yield event

    async def _stream(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]:
        params = self.request_params(request)
        try:
            async for event in stream_with_retries(lambda: self._attempt(params), self.retry):
                yield event
        except GsvError as exc:
            if len(self.api_key) < 8 or self.api_key not in exc.message:
                raise
            # a proxy or server that quotes the key it refused: never pass it on
            from gsv_core.providers.keys import fingerprint

            message = exc.message.replace(self.api_key, fingerprint(self.api_key))
            raise type(exc)(message, details=exc.details, retryable=exc.retryable) from None

    @abstractmethod
    def request_params(self, request: ModelRequest) -> Any:
        """What the attempt sends for `request`: the SDK call's arguments (Anthropic) or
        the request's JSON body, encoded (OpenAI-compatible: chat_request.py)."""

    @abstractmethod
    def _new_client(self) -> Any:
        """A new SDK client for `base_url` (closed with `await client.close()`)."""

    def _sdk_client(self, client_class: Any, httpx_client_class: Any) -> Any:
        """A `client_class` (the SDK's async client) for `base_url` (`sdk_client`)."""
        return sdk_client(
            client_class, httpx_client_class, self.api_key, self.base_url, self.llm_timeout
        )

    def _client_for_attempt(self) -> _ClientLease:
        """`async with` it around an attempt: the kept client, else a new one closed after."""
        return _ClientLease(self)

    def retire(self) -> bool:
        """No new attempts will come (the pool let go of this provider): its client is
        closed when the last attempt in flight ends. True when none is: close it now."""
        self._retired = True
        return not self._in_use

    async def close_if_idle(self) -> None:
        """Close the client unless an attempt began on it since the provider was retired
        (that attempt's end closes it)."""
        if not self._in_use:
            await self.close()

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    @abstractmethod
    def _attempt(self, params: Any) -> AsyncGenerator[StreamEvent, None]:
        """One streaming call of what `request_params` gave; failures raised as gsv
        errors (see retry.py)."""

    def _failure(self, exc: Exception, *, streaming: bool) -> Exception:
        """The gsv error an SDK exception stands for (`streaming`: after the call began):
        a timeout, a broken connection (a stream cut short once the call began, else
        unreachable), the server's answer with an error status, or one of no kind we know.
        Both SDKs name their classes alike; httpx's own errors come through while a
        stream is read."""
        import httpx2

        sdk = self._sdk()
        # aiohttp's transport calls a refused connection a timeout (retry.http_client)
        if isinstance(exc, sdk.APITimeoutError | httpx2.TimeoutException) and not refused(exc):
            return timed_out(self.name, self.llm_timeout)
        if isinstance(exc, sdk.APIConnectionError | httpx2.HTTPError):
            if streaming:
                return truncated(self.name, cause_text(exc))
            return unreachable(self.name, self.base_url, cause_text(exc))
        if isinstance(exc, sdk.APIStatusError):
            return self._status_failure(exc, streaming=streaming)
        return ProviderFailed(f"{self.name} failed: {short(str(exc))}")

    @abstractmethod
    def _sdk(self) -> Any:
        """The SDK's module, imported when a request is made."""

    @abstractmethod
    def _status_failure(self, exc: Any, *, streaming: bool) -> Exception:
        """The gsv error of the SDK's status error `exc`."""

    async def _read(
        self,
        raw_events: AsyncIterable[Any],
        reader: StreamReader,
        sdk_errors: tuple[type[Exception], ...],
    ) -> AsyncGenerator[StreamEvent, None]:
        """The gsv events of one SDK stream; `sdk_errors` raised while reading become
        gsv errors through `_failure`."""
        try:
            async for raw in raw_events:
                for event in reader.feed(raw):
                    yield event
        except sdk_errors as exc:
            raise self._failure(exc, streaming=True) from exc
        except (ValueError, TypeError, AttributeError) as exc:
            # a raw event that is not JSON or lacks the fields every event has
            raise malformed(self.name, malformed_reason(exc)) from exc
        for event in reader.finish():
            yield event


class _ClientLease:
    """An SDK client for one attempt. A class, not an `asynccontextmanager`: an attempt is
    an async generator that a consumer may drop half read, and a generator inside it would
    be closed later from another task, where the HTTP client's cancel scopes refuse to exit."""

    def __init__(self, provider: SdkProvider) -> None:
        self._provider = provider
        self._own: Any = None  # a client made for this attempt alone

    async def __aenter__(self) -> Any:
        provider = self._provider
        if not provider.keep_client:
            self._own = provider._new_client()
            return await self._own.__aenter__()
        if provider._client is None:
            provider._client = provider._new_client()
        provider._in_use += 1
        return provider._client

    async def __aexit__(self, *exc_info: Any) -> None:
        provider = self._provider
        if self._own is not None:
            await self._own.__aexit__(*exc_info)
            return
        provider._in_use -= 1
        if provider._retired and not provider._in_use:
            await provider.close()


def split_plain_json(
    params: dict[str, Any], keys: Iterable[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """`params` as (typed arguments, plain-JSON `extra_body`).

    The SDKs walk every message through their typed transform before sending, which costs
    more than the rest of a turn once the history grows (measured: 40% of the gateway's
    CPU per call). The fields named in `keys` are plain JSON already, so they ride in
    `extra_body`, which the SDK merges into the body untouched.
    """
    plain = {key: params[key] for key in keys if key in params}
    typed = {key: value for key, value in params.items() if key not in plain}
    return typed, plain
