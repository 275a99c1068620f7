"""Native tools (being written)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gsv_core.gateway.native.registry import NativeToolRegistry

if TYPE_CHECKING:
    from gsv_core.gateway.app import Gateway


def register(registry: NativeToolRegistry, gateway: Gateway) -> None:
    """Registers nothing yet."""
