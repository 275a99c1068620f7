"""`mcp.list|add|remove|test` (gsv addition, docs/mcp.md): the MCP servers whose tools the
agent is offered. `mcp.add` takes the `mcp.servers.<name>` settings (docs/mcp.md); its
result and each `mcp.list` entry is `{name, transport, enabled, state, toolCount,
lastError?, config, tools}` with the config's secrets masked; `tools` says of each offered
tool whether its server marks it read-only and whether a call of it runs unasked."""

from __future__ import annotations

import re

from pydantic import Field
from pydantic import field_validator

from gsv_core.protocol.schemas import WireModel

# a server name becomes part of tool names (`mcp_<server>__<tool>`): no "__", no dots,
# and short enough to leave room for the tool's own name
SERVER_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]|_(?=[A-Za-z0-9-])){0,31}")


def check_server_name(name: str) -> str:
    if not SERVER_NAME.fullmatch(name):
        raise ValueError(
            f"{name!r} is no valid MCP server name: 1-32 letters, digits, '-' or single "
            "'_' (not at the end), starting with a letter or digit"
        )
    return name


class McpNameParams(WireModel):
    name: str

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_server_name(value)


class McpAddParams(McpNameParams):
    command: str | None = None
    args: list[str] | None = None
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] | None = None
    enabled: bool | None = None
    timeoutMs: int | None = None
    startTimeoutMs: int | None = None
    allowTools: list[str] | None = None
    denyTools: list[str] | None = None
    # replace a server of that name instead of refusing with 409
    replace: bool = False


class McpToolApproval(WireModel):
    """How the approval policy takes an offered tool (docs/mcp.md#approvals)."""

    name: str  # the name the model is offered
    # the server marks it `readOnlyHint: true` in its MCP annotations
    readOnly: bool = False
    # allow (runs unasked), ask or deny: the policy's decision on a call of it with no
    # arguments (the owner's rules first); a rule with conditions is judged per call
    approval: str | None = None


class McpToolInfo(WireModel):
    name: str  # as the server spells it
    description: str = ""
    # the name the model is offered; null when it is not offered (name, allow/deny list)
    offeredAs: str | None = None
    readOnly: bool = False
    approval: str | None = None  # as in McpToolApproval; null when not offered


class McpTestResult(WireModel):
    name: str
    tools: list[McpToolInfo] = Field(default_factory=list)
    count: int
