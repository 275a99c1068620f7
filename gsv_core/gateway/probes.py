"""The gateway's nodes as skills see them (`gsv_core.skills.NodeAccess`): each connected
node's runtime (capabilities, OS, environment variable names) as a `SkillHost`, and
`node.probe` through the node registry (`NodeService.probe_bins`, answered by the
`node.probe.result` handler)."""

from __future__ import annotations

from gsv_core.gateway.nodes import NodeService
from gsv_core.skills.eligibility import SkillHost
from gsv_core.skills.manifest import normalise_os


class GatewayNodeAccess:
    def __init__(self, nodes: NodeService) -> None:
        self._nodes = nodes

    def hosts(self) -> list[SkillHost]:
        hosts = []
        for node_id in self._nodes.online_ids():
            entry = self._nodes.online(node_id)
            if entry is None:
                continue
            runtime = entry.runtime
            hosts.append(
                SkillHost(
                    node_id=node_id,
                    capabilities=tuple(runtime.hostCapabilities),
                    os=normalise_os(runtime.hostOs) if runtime.hostOs else None,
                    env=tuple(runtime.hostEnv),
                    role=runtime.hostRole,
                )
            )
        return hosts

    async def probe_bins(self, node_id: str, bins: list[str], timeout: float) -> dict[str, bool]:
        return await self._nodes.probe_bins(node_id, bins, timeout)
