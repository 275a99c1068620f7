"""Who is connected: clients by id, nodes by id (with their tools), channels by
`{channel}:{accountId}`. A newer connection with the same id replaces the older one,
which is closed with 1000 "Replaced by newer {mode} connection" (spec 2.3)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from gsv_core.protocol.methods import CHANNEL, CLIENT, NODE
from gsv_core.protocol.schemas.connect import ToolDefinition
from gsv_core.rpc.context import Peer

log = logging.getLogger(__name__)

TOOL_NAMESPACE_SEPARATOR = "__"


@dataclass
class NodeEntry:
    peer: Peer
    tools: list[ToolDefinition]
    runtime: dict[str, Any] | None = None
    platform: str = ""
    version: str = ""


@dataclass
class ChannelEntry:
    peer: Peer
    channel: str
    account_id: str


@dataclass
class ConnectionRegistry:
    clients: dict[str, Peer] = field(default_factory=dict)
    nodes: dict[str, NodeEntry] = field(default_factory=dict)
    channels: dict[str, ChannelEntry] = field(default_factory=dict)

    def register_client(self, peer: Peer, client_id: str) -> None:
        self.drop(peer)
        self._replace(self.clients.get(client_id), CLIENT)
        self.clients[client_id] = peer

    def register_node(self, peer: Peer, node_id: str, entry: NodeEntry) -> None:
        self.drop(peer)
        old = self.nodes.get(node_id)
        self._replace(old.peer if old else None, NODE)
        self.nodes[node_id] = entry

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
            old.close(1000, f"Replaced by newer {mode} connection")

    def drop(self, peer: Peer) -> None:
        """Forget a peer's registration, if it is still the current one for its id."""
        if peer.peer_id is None:
            return
        if self.clients.get(peer.peer_id) is peer:
            del self.clients[peer.peer_id]
        node = self.nodes.get(peer.peer_id)
        if node is not None and node.peer is peer:
            del self.nodes[peer.peer_id]
        for key, entry in list(self.channels.items()):
            if entry.peer is peer:
                del self.channels[key]

    def node_tools(self) -> list[ToolDefinition]:
        """Tools of connected nodes, nodes sorted by id, named `{nodeId}__{tool}`."""
        return [
            tool.model_copy(update={"name": f"{node_id}{TOOL_NAMESPACE_SEPARATOR}{tool.name}"})
            for node_id in sorted(self.nodes)
            for tool in self.nodes[node_id].tools
        ]
