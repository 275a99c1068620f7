"""`workspace.*` methods (being written)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gsv_core.rpc.dispatch import Router

if TYPE_CHECKING:
    from gsv_core.gateway.app import Gateway


def register(router: Router, gateway: Gateway) -> None:
    """Registers nothing yet."""
