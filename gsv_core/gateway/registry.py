"""Who is connected: clients by id and channels by `{channel}:{accountId}` (nodes live in
`gsv_core.gateway.nodes`). A newer connection with the same id replaces the older one,
which is closed with 1000 "Replaced by newer {mode} connection"."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from dataclasses import field

from gsv_core.protocol.close_codes import CloseCode
from gsv_core.protocol.methods import CHANNEL
from gsv_core.protocol.methods import CLIENT
from gsv_core.rpc.context import Peer

log = logging.getLogger(__name__)


@dataclass
class ChannelEntry:
    peer: Peer
    channel: str
    account_id: str
    connected_at: int = field(default_factory=lambda: int(time.time() * 1000))


@dataclass
class ConnectionRegistry:
    clients: dict[str, Peer] = field(default_factory=dict)
    channels: dict[str, ChannelEntry] = field(default_factory=dict)

    def register_client(self, peer: Peer, client_id: str) -> None:
        self.drop(peer)
        self._replace(self.clients.get(client_id), CLIENT)
        self.clients[client_id] = peer

    def register_channel(self, peer: Peer, channel: str, account_id: str) -> str:
        self.drop(peer)
        key = f"{channel}:{account_id}"
        old = self.channels.get(key)
        self._replace(old.peer if old else None, CHANNEL)
        self.channels[key] = ChannelEntry(peer, channel, account_id)
        return key

    def _replace(self, old: Peer | None, mode: str) -> None:
        if old is not None:
            log.info("%s %s replaced by a newer connection", mode, old.peer_id)
            old.close(CloseCode.NORMAL_CLOSURE, f"Replaced by newer {mode} connection")

    def drop(self, peer: Peer) -> None:
        """Forget a peer's registration, if it is still the current one for its id."""
        if peer.peer_id is None:
            return
        if self.clients.get(peer.peer_id) is peer:
            del self.clients[peer.peer_id]
        for key, entry in list(self.channels.items()):
            if entry.peer is peer:
                del self.channels[key]
