"""The gateway's ToolExecutor: `gsv__*` names run in the native tool registry, everything
else is a `{nodeId}__{Tool}` node tool sent to its node (spec 7.6)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from gsv_core.agent.tools import ToolCallContext
from gsv_core.gateway.native.registry import NATIVE_PREFIX, NativeToolRegistry
from gsv_core.providers.base import ToolSpec

if TYPE_CHECKING:
    from gsv_core.gateway.app import Gateway


class GatewayToolRouter:
    def __init__(self, gateway: Gateway, native: NativeToolRegistry) -> None:
        self._gateway = gateway
        self.native = native

    def specs(self, ctx: ToolCallContext) -> list[ToolSpec]:
        """Native tools first, then node tools (nodes sorted by id), as in tools.list."""
        nodes = [
            ToolSpec(tool.name, tool.description, tool.inputSchema or {"type": "object"})
            for tool in self._gateway.nodes.tool_definitions()
        ]
        return [*self.native.specs(), *nodes]

    async def execute(self, name: str, args: dict[str, Any], ctx: ToolCallContext) -> Any:
        if name.startswith(NATIVE_PREFIX):
            return await self.native.run(name, args, ctx)
        # our own call id: the model's tool-call ids are not unique across sessions
        return await self._gateway.nodes.invoke(
            name, args, self._gateway.tool_timeout(), call_id=str(uuid.uuid4())
        )
