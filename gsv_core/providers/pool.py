"""Providers kept between turns, so a turn does not build an SDK client and open a new
HTTP connection (a TLS handshake, for a hosted API) each time it calls the model.

A provider is kept under everything it was built from: its resolved settings, the key,
the timeout and the retry policy. A config change that alters any of them resolves to a
different entry, so the next call uses the new settings; `clear()` (on a change of the
providers' config) lets go of every entry at once. A provider let go of closes its client
when its last call in flight ends, never under a stream.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any

from gsv_core.providers.registry import ProviderSettings
from gsv_core.providers.registry import build_provider
from gsv_core.providers.registry import provider_settings
from gsv_core.providers.retry import RetryPolicy
from gsv_core.providers.sdk import SdkProvider

# more than the models one owner's fallback chains and key pools name at once
DEFAULT_LIMIT = 16

_Identity = tuple[ProviderSettings, str, float, RetryPolicy]


class ProviderPool:
    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self._limit = limit
        self._kept: OrderedDict[_Identity, SdkProvider] = OrderedDict()
        self._closing: set[asyncio.Task[None]] = set()

    def get(
        self,
        config: dict[str, Any],
        name: str,
        *,
        llm_timeout: float,
        retry: RetryPolicy,
        key: str | None = None,
        settings: ProviderSettings | None = None,
    ) -> SdkProvider:
        """Provider `name` as `config` has it now (`registry.resolve_provider`, kept);
        `settings`: its settings from `config`, when the caller has them already."""
        settings = settings or provider_settings(config, name)
        identity = (settings, key or settings.api_key, llm_timeout, retry)
        provider = self._kept.get(identity)
        if provider is not None:
            self._kept.move_to_end(identity)
            return provider
        provider = build_provider(
            settings, llm_timeout=llm_timeout, retry=retry, key=key, keep_client=True
        )
        self._kept[identity] = provider
        while len(self._kept) > self._limit:
            self._let_go(self._kept.popitem(last=False)[1])
        return provider

    def clear(self) -> None:
        """Let go of every provider (the providers' settings changed)."""
        kept, self._kept = self._kept, OrderedDict()
        for provider in kept.values():
            self._let_go(provider)

    async def close(self) -> None:
        """Gateway shutdown (after the runs ended): close every client, even one whose
        attempt was dropped unfinished (nothing will stream on it any more)."""
        kept, self._kept = self._kept, OrderedDict()
        await asyncio.gather(*self._closing, return_exceptions=True)
        for provider in kept.values():
            provider.retire()
            await provider.close()

    def _let_go(self, provider: SdkProvider) -> None:
        if provider.retire():  # idle: close now; else its last attempt closes it
            # a holder of the provider may begin an attempt before this task runs
            task = asyncio.get_running_loop().create_task(provider.close_if_idle())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
