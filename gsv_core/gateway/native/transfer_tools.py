"""`gsv__Transfer` (docs/tools.md#gateway-native-tools): move a file between nodes and the
calling agent's workspace; the call returns once the file is complete end to end.

The approval policy judges a call as what it does at each end (gateway/tool_router.py); a
node judges its end again and asks for the gateway's approval binding where its standard
policy would ask, which the transfer service signs with that node's key."""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from pydantic import Field

from gsv_core.agent.tools import ToolCallContext
from gsv_core.gateway.native_registry import NativeArgs
from gsv_core.gateway.native_registry import NativeTool
from gsv_core.gateway.native_registry import NativeToolRegistry

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway


class TransferArgs(NativeArgs):
    source: str = Field(description="nodeId:/path/to/file or gsv:workspace/path.")
    destination: str = Field(description="Same format as source.")


def register(registry: NativeToolRegistry, gateway: Gateway) -> None:
    async def transfer(args: TransferArgs, ctx: ToolCallContext) -> dict[str, Any]:
        return await gateway.transfers.run(args.source, args.destination, ctx.agent_id)

    registry.add(
        NativeTool(
            "gsv__Transfer",
            "Transfer a file between connected nodes and/or the workspace. The tool stays "
            "pending until the transfer completes end-to-end.",
            TransferArgs,
            transfer,
        )
    )
