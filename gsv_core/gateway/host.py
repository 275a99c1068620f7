"""GatewayHost: what the gateway offers every part it hosts (agents, channels, heartbeat):
the effective config, read again on each call so a change applies at once, and the
gateway's clock."""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway


class GatewayHost:
    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway

    def config(self) -> dict[str, Any]:
        return self._gateway.config.effective

    def now_ms(self) -> int:
        return self._gateway.now_ms()
