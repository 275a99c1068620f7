"""`ChannelParts`: what the channel manager, its inbox and its outbox all work over, so
that each is built from one object instead of the same five arguments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gsv_core.channels.base import Channel
from gsv_core.channels.host import ChannelHost
from gsv_core.pairing import PairingService
from gsv_core.storage.channels import ChannelStore
from gsv_core.storage.outbox import OutboxStore


# eq=False: the manager (a subclass) is compared and hashed by identity, as a sink
@dataclass(eq=False)
class ChannelParts:
    """The accounts' store and journal, pairing, the gateway as host, the in-process
    adapters by channel name, and the durable reply queue."""

    store: ChannelStore
    pairing: PairingService
    host: ChannelHost
    adapters: dict[str, Channel]
    queued: OutboxStore

    def settings(self, channel: str) -> dict[str, Any]:
        """`channels.<channel>` of the effective config ({} when absent)."""
        channels = self.host.config().get("channels") or {}
        value = channels.get(channel)
        return value if isinstance(value, dict) else {}
