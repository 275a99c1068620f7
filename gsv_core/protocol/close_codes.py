"""WebSocket close codes the gateway sends, named (the numbers are the wire contract)."""

from __future__ import annotations

from enum import IntEnum


class CloseCode(IntEnum):
    NORMAL_CLOSURE = 1000  # e.g. a newer connection replaced this one
    GOING_AWAY = 1001  # a silent connection whose node reconnected on a new one
    MESSAGE_TOO_BIG = 1009  # a message over the size limit
    UNAUTHORIZED = 4001  # a bad token at `connect`, or a credential revoked meanwhile
