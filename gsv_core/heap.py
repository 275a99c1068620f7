"""Long-lived objects kept out of the cyclic garbage collector's sight, in the gateway's
own process.

A full collection walks every object the collector tracks. With the provider SDKs loaded
the gateway holds about 240,000 of them (openai's and anthropic's pydantic models, their
schemas, aiohttp): one full collection took 100-160 ms, and it holds the event loop while
it runs. Falling inside a crowd of requests it was the crowd's worst wait (bench/crowd.py:
`config.get` p99 120-280 ms in the bursts it fell in, 20-50 ms in the others).

What exists once the gateway has started, and what an SDK's first import brings, lives as
long as the process. `gc.freeze()` moves every object tracked then to the permanent
generation, which collections skip: they walk only what came after. Reference counting
still frees a frozen object that dies; only a reference cycle among frozen objects would
stay, and freezing happens once at the start and once per SDK, so what could stay is
bounded. Only a process that is the gateway's own enables it (`gsv gateway run`, the
benches' gateways): a test process serving gateways does not.
"""

from __future__ import annotations

import gc

_enabled = False
_frozen: set[str] = set()


def freeze_started() -> None:
    """The gateway has started (its modules loaded, its state built): collect what
    starting left over, then freeze the rest, and freeze again after each SDK import."""
    global _enabled
    _enabled = True
    gc.collect()
    gc.freeze()


def loaded(sdk: str) -> None:
    """`sdk` was imported (its first client is being built): freeze what it brought, once.
    Nothing unless `freeze_started` was called in this process."""
    if _enabled and sdk not in _frozen:
        _frozen.add(sdk)
        gc.freeze()
