"""Waiting in tests for what another task, thread or process brings about: on the
condition itself, never on a clock. WAIT bounds every such wait; it only turns a hang into
a failure that names what never happened, so it is generous (a loaded 2-core machine, a
cold start of a child Python) and below pytest-timeout's 60 s."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

WAIT = 30.0


async def until(
    check: Callable[[], Any], what: str = "the condition", seconds: float = WAIT
) -> Any:
    """What `check()` (sync or async) gives once it is truthy; fails naming `what` if it
    never is within `seconds`."""
    try:
        async with asyncio.timeout(seconds):
            while True:
                value = check()
                if inspect.isawaitable(value):
                    value = await value
                if value:
                    return value
                await asyncio.sleep(0.01)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None
