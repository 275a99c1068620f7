"""Node payloads: runtime info validation (docs/protocol.md#connect) and the
params of the node-facing methods (`tool.*`, `logs.*`, `node.*`, docs/protocol.md#methods
"Logs")."""

from __future__ import annotations

import re
import sys
from typing import Annotated
from typing import Any
from typing import Literal

from pydantic import Field
from pydantic import StringConstraints
from pydantic import ValidationError

from gsv_core.errors import InvalidConnectParams
from gsv_core.protocol.schemas import WireModel
from gsv_core.protocol.schemas.connect import ToolDefinition

# Capability ids (docs/tools.md).
CAPABILITY_IDS = frozenset(
    {
        "filesystem.list",
        "filesystem.read",
        "filesystem.write",
        "filesystem.edit",
        "text.search",
        "shell.exec",
    }
)
# Binary names a probe may ask about (docs/protocol.md#tools-and-nodes): no paths, no
# shell syntax.
BIN_NAME = re.compile(r"^[A-Za-z0-9._+-]{1,128}$")
TOOL_SEPARATOR = "__"
# `mcp_<server>__<tool>`: an MCP server's tool (gsv_core/mcp/names.py); no node id starts so
MCP_PREFIX = "mcp_"


def is_mcp_name(name: str) -> bool:
    return name.startswith(MCP_PREFIX) and TOOL_SEPARATOR in name


class NodeSandbox(WireModel):
    """gsv addition: the OS sandbox the node runs unapproved commands in (docs/sandbox.md)."""

    backend: str  # "bwrap" | "seatbelt" | "none"
    network: bool = True  # confined commands reach the network
    reason: str | None = None  # why there is none, and how to get one

    @property
    def active(self) -> bool:
        return self.backend != "none"


class NodeRuntime(WireModel):
    """NodeRuntimeInfo as validated at connect: capability lists deduplicated and sorted."""

    hostRole: Literal["execution", "specialized"] = "execution"
    hostCapabilities: list[str]
    toolCapabilities: dict[str, list[str]]
    hostOs: str | None = None
    hostEnv: list[str] = Field(default_factory=list)
    hostBinStatus: dict[str, bool] = Field(default_factory=dict)
    hostBinStatusUpdatedAt: int | None = None
    # gsv additions: where relative paths land and the daemon's pid (approval policy)
    workspace: str | None = None
    pid: int | None = None
    # and the sandbox of its commands; absent: a node too old to have one
    sandbox: NodeSandbox | None = None


def validate_node_runtime(node_id: str, tools: list[ToolDefinition], raw: Any) -> NodeRuntime:
    """Check a node's runtime against its tools; 103 with the reason otherwise."""
    if not isinstance(raw, dict):
        raise InvalidConnectParams(f"Invalid nodeRuntime: nodeRuntime for {node_id} is required")
    try:
        runtime = NodeRuntime.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InvalidConnectParams(f"Invalid nodeRuntime: {where}: {first['msg']}") from None
    host = _capability_list(runtime.hostCapabilities, "hostCapabilities")
    names = [tool.name for tool in tools]
    extra = sorted(set(runtime.toolCapabilities) - set(names))
    if extra:
        raise InvalidConnectParams(
            f"Invalid nodeRuntime: toolCapabilities names unknown tools: {', '.join(extra)}"
        )
    per_tool: dict[str, list[str]] = {}
    for name in names:
        if name not in runtime.toolCapabilities:
            raise InvalidConnectParams(
                f"Invalid nodeRuntime: tool {name} has no toolCapabilities entry"
            )
        caps = _capability_list(runtime.toolCapabilities[name], f"toolCapabilities.{name}")
        missing = sorted(set(caps) - set(host))
        if missing:
            raise InvalidConnectParams(
                f"Invalid nodeRuntime: tool {name} needs {', '.join(missing)}, "
                "which hostCapabilities does not list"
            )
        per_tool[name] = caps
    # interned: a crowd of nodes on alike machines names the same variables (and
    # capabilities): each name is kept once, not once per node
    env = sorted({sys.intern(name.strip()) for name in runtime.hostEnv if name.strip()})
    bins = {name: ok for name, ok in runtime.hostBinStatus.items() if BIN_NAME.match(name)}
    return runtime.model_copy(
        update={
            "hostCapabilities": host,
            "toolCapabilities": per_tool,
            "hostEnv": env,
            "hostBinStatus": bins,
        }
    )


def _capability_list(values: list[str], where: str) -> list[str]:
    cleaned = sorted({sys.intern(value.strip()) for value in values})
    if not cleaned:
        raise InvalidConnectParams(f"Invalid nodeRuntime: {where} must not be empty")
    unknown = [value for value in cleaned if value not in CAPABILITY_IDS]
    if unknown:
        raise InvalidConnectParams(
            f"Invalid nodeRuntime: unknown capability id {unknown[0]!r} in {where} "
            f"(known: {', '.join(sorted(CAPABILITY_IDS))})"
        )
    return cleaned


def split_tool_name(name: str) -> tuple[str, str] | None:
    """`{nodeId}__{tool}` -> (nodeId, tool), split at the first separator; None otherwise."""
    node_id, sep, tool = name.partition(TOOL_SEPARATOR)
    if not sep or not node_id or not tool:
        return None
    return node_id, tool


class ToolInvokeParams(WireModel):
    tool: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)


class ToolRequestParams(WireModel):
    callId: str = Field(min_length=1, max_length=128)
    tool: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)
    sessionKey: str = Field(min_length=1)


class ToolResultParams(WireModel):
    callId: str = Field(min_length=1)
    result: Any = None
    error: str | None = None


class AckResult(WireModel):
    ok: Literal[True] = True
    dropped: bool | None = None


class LogsGetParams(WireModel):
    nodeId: str | None = None
    lines: int = Field(default=100, ge=1)


class LogsResultParams(WireModel):
    callId: str = Field(min_length=1)
    lines: list[str] = Field(default_factory=list)
    truncated: bool = False
    error: str | None = None


class LogsGetResult(WireModel):
    nodeId: str
    lines: list[str]
    count: int
    truncated: bool


class NodeForgetParams(WireModel):
    nodeId: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
    force: bool = False


class NodeForgetResult(WireModel):
    ok: Literal[True] = True
    nodeId: str
    removed: bool
    disconnected: bool


class NodeProbeResultParams(WireModel):
    probeId: str = Field(min_length=1)
    ok: bool
    bins: dict[str, bool] = Field(default_factory=dict)
    error: str | None = None


class NodeExecEventParams(WireModel):
    eventId: str = Field(min_length=1, max_length=256)  # required: the dedupe key
    sessionId: str
    event: str
    callId: str | None = None
    exitCode: int | None = None
    signal: str | None = None
    outputTail: str | None = None
    startedAt: int | None = None
    endedAt: int | None = None


class NodeInfo(WireModel):
    """One entry of `nodes.list`."""

    nodeId: str
    online: bool
    platform: str | None = None
    version: str | None = None
    tools: list[str]
    hostCapabilities: list[str]
    hostOs: str | None = None
    firstSeenAt: int | None = None
    lastSeenAt: int | None = None
    lastConnectedAt: int | None = None
    lastDisconnectedAt: int | None = None
    # gsv addition: the sandbox its commands run in (as it said when it last connected)
    sandbox: NodeSandbox | None = None


class NodesListResult(WireModel):
    nodes: list[NodeInfo]
    count: int
