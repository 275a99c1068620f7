"""`mcp.list|add|remove|test` (docs/mcp.md): the MCP servers of `mcp.servers`. Adding or
removing one is a config write (validated, its secrets put in the secret store); the
supervisor's config listener starts or stops the server. Each offered tool is reported
with the approval policy's decision on it (docs/mcp.md#approvals)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING
from typing import Any

from gsv_core.approval.policy import ApprovalPolicy
from gsv_core.approval.policy import CallFacts
from gsv_core.approval.protected import Protected
from gsv_core.config.mcp import McpServerConfig
from gsv_core.errors import Conflict
from gsv_core.errors import NotFound
from gsv_core.errors import Unavailable
from gsv_core.gateway.handlers.routes import add_routes
from gsv_core.mcp.client import sdk_missing
from gsv_core.mcp.supervisor import ServerState
from gsv_core.mcp.supervisor import marked_read_only
from gsv_core.protocol import methods as m
from gsv_core.protocol.schemas.mcp import McpAddParams
from gsv_core.protocol.schemas.mcp import McpNameParams
from gsv_core.protocol.schemas.mcp import McpTestResult
from gsv_core.protocol.schemas.mcp import McpToolApproval
from gsv_core.protocol.schemas.mcp import McpToolInfo
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway

# the mcp.add fields that are server settings (the rest steer the call)
_SETTINGS = tuple(McpServerConfig.model_fields)


def register(router: Router, gateway: Gateway) -> None:
    def verdicts() -> Callable[[Any, str], str]:
        """The policy's decision on a call of an offered tool with no arguments (gsv's
        secrets and processes concern a call's arguments: there are none to protect)."""
        policy = ApprovalPolicy.from_config(gateway.config.effective, Protected())

        def verdict(tool: Any, offered: str) -> str:
            facts = CallFacts(offered, offered, None, {}, read_only=marked_read_only(tool))
            return policy.decide(facts).verdict

        return verdict

    def entry(name: str, state: ServerState | None) -> dict[str, Any]:
        config = gateway.config.get_masked(f"mcp.servers.{name}")[1] or {}
        verdict = verdicts()
        tools = [McpToolApproval(name=offered, readOnly=marked_read_only(tool),
                                 approval=verdict(tool, offered)).to_wire()
                 for offered, tool in (state.tools if state else {}).items()]  # fmt: skip
        return {
            "name": name,
            "transport": "http" if "url" in config else "stdio",
            "enabled": config.get("enabled", True),
            "state": state.state if state else "stopped",
            "toolCount": len(state.tools) if state else 0,
            "lastError": state.last_error if state else None,
            "config": config,
            "tools": tools,
        }

    def configured(name: str) -> bool:
        return name in gateway.config.setting("mcp.servers")

    async def mcp_list(ctx: RequestContext, params: object) -> dict[str, Any]:
        names = sorted(gateway.config.setting("mcp.servers"))
        servers = [entry(name, gateway.mcp.state(name)) for name in names]
        return {"servers": servers, "count": len(servers)}

    async def mcp_add(ctx: RequestContext, params: McpAddParams) -> dict[str, Any]:
        if (missing := sdk_missing()) is not None:
            raise Unavailable(missing)
        if configured(params.name) and not params.replace:
            raise Conflict(
                f"an MCP server named {params.name!r} exists: remove it first "
                "(gsv mcp remove) or add it with replace"
            )
        wire = params.model_dump(exclude_none=True)
        settings = {key: wire[key] for key in _SETTINGS if key in wire}
        await gateway.config.set(f"mcp.servers.{params.name}", settings)
        return entry(params.name, await gateway.mcp.settle(params.name))

    async def mcp_remove(ctx: RequestContext, params: McpNameParams) -> dict[str, Any]:
        if not configured(params.name):
            raise NotFound(f"no MCP server named {params.name!r}")
        await gateway.config.set(f"mcp.servers.{params.name}", None)  # its listener stops it
        return {"ok": True, "name": params.name}

    async def mcp_test(ctx: RequestContext, params: McpNameParams) -> McpTestResult:
        if not configured(params.name):
            raise NotFound(f"no MCP server named {params.name!r}")
        if (missing := sdk_missing()) is not None:
            raise Unavailable(missing)
        listed = await gateway.mcp.test(params.name)
        verdict = verdicts()
        tools = [McpToolInfo(name=tool.name, description=tool.description or "", offeredAs=offered,
                             readOnly=marked_read_only(tool),
                             approval=verdict(tool, offered) if offered else None)
                 for tool, offered in listed]  # fmt: skip
        return McpTestResult(name=params.name, tools=tools, count=len(tools))

    add_routes(
        router,
        (m.MCP_LIST, mcp_list, None),
        (m.MCP_ADD, mcp_add, McpAddParams),
        (m.MCP_REMOVE, mcp_remove, McpNameParams),
        (m.MCP_TEST, mcp_test, McpNameParams),
    )
