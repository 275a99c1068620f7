"""`gsv__ConfigGet` and `gsv__LogsGet` (docs/tools.md#gateway-native-tools)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from pydantic import Field

from gsv_core.agent.tools import ToolCallContext
from gsv_core.gateway.native_registry import NativeArgs
from gsv_core.gateway.native_registry import NativeTool
from gsv_core.gateway.native_registry import NativeToolRegistry
from gsv_core.protocol.schemas.config import CONFIG_PATH_PATTERN

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway

LOGS_TIMEOUT = 20.0


class ConfigGetArgs(NativeArgs):
    path: str | None = Field(
        default=None,
        pattern=CONFIG_PATH_PATTERN,
        description='Dotted path, e.g. "session.dmScope"; omit for all of it.',
    )


class LogsGetArgs(NativeArgs):
    nodeId: str | None = Field(default=None, description="Needed when several are connected.")
    lines: int = Field(default=100, ge=1, le=5000)


def register(registry: NativeToolRegistry, gateway: Gateway) -> None:
    async def config_get(args: ConfigGetArgs, ctx: ToolCallContext) -> dict[str, Any]:
        # secrets are masked in every read, also by path
        if args.path is None:
            return {"config": gateway.config.masked}
        found, value = gateway.config.get_masked(args.path)
        return {"path": args.path, "value": value} if found else {"path": args.path}

    async def logs_get(args: LogsGetArgs, ctx: ToolCallContext) -> dict[str, Any]:
        result = await gateway.nodes.fetch_logs(args.nodeId, args.lines, LOGS_TIMEOUT)
        return result.to_wire()

    registry.add(
        NativeTool(
            "gsv__ConfigGet",
            "Inspect the Gateway configuration. Secrets are masked.",
            ConfigGetArgs,
            config_get,
        )
    )
    registry.add(
        NativeTool(
            "gsv__LogsGet",
            "Fetch recent log lines from a connected node.",
            LogsGetArgs,
            logs_get,
        )
    )
