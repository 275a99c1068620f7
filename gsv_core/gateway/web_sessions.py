"""Browsers' sockets end with their sign-in (docs/web.md): a web credential admits a
socket until `sign_in_ends`, 30 days after the sign-in, and a socket open then is
closed with 4001, as revoking the credential closes it. The page then shows how to sign
in again.

One timer looks at the connected clients, closes those whose sign-in has ended, and
sleeps until the next one ends (at most a minute: a moved clock is noticed). `connect`
wakes it when a browser joins; tests move the injected clock and wake it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from gsv_core.gateway.registry import ConnectionRegistry
from gsv_core.protocol.close_codes import CloseCode
from gsv_core.timer import Timer
from gsv_core.timer import seconds_until

log = logging.getLogger(__name__)

CLOSE_SIGNED_OUT = (CloseCode.UNAUTHORIZED, "Signed out: the sign-in ended after 30 days")


class WebSessionService:
    def __init__(self, registry: ConnectionRegistry, now_ms: Callable[[], int]) -> None:
        self._registry = registry
        self._now_ms = now_ms
        self._timer = Timer("web-sessions", self._tick)

    def start(self) -> None:
        self._timer.start()

    def wake(self) -> None:
        """Look again now (a browser connected, or the clock moved)."""
        self._timer.wake()

    async def stop(self) -> None:
        await self._timer.stop()

    def _tick(self) -> float:
        now = self._now_ms()
        later: list[int] = []
        for peer in list(self._registry.clients.values()):
            ends = peer.sign_in_ends
            if ends is None:
                continue
            if now >= ends:
                log.info("closing connection %s: its web sign-in ended", peer.connection_id)
                peer.close(*CLOSE_SIGNED_OUT)
            else:
                later.append(ends)
        return seconds_until(later, now)
