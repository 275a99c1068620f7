"""The names MCP tools are offered under: `mcp_<server>__<tool>`.

Model APIs take tool names of at most 64 characters of [A-Za-z0-9_-]; a server tool whose
combined name does not fit is not offered (the supervisor logs it).
"""

from __future__ import annotations

import re

from gsv_core.protocol.schemas.nodes import MCP_PREFIX
from gsv_core.protocol.schemas.nodes import TOOL_SEPARATOR
from gsv_core.protocol.schemas.nodes import is_mcp_name

__all__ = ["MCP_PREFIX", "is_mcp_name", "offered_name", "split_name"]
SEPARATOR = TOOL_SEPARATOR
_MODEL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def offered_name(server: str, tool: str) -> str | None:
    """The name the model sees, or None when it would not be a valid tool name."""
    name = f"{MCP_PREFIX}{server}{SEPARATOR}{tool}"
    return name if tool and _MODEL_NAME.fullmatch(name) else None


def split_name(name: str) -> tuple[str, str] | None:
    """`mcp_<server>__<tool>` -> (server, tool); server names hold no "__", so the first
    separator ends the server's name."""
    if not name.startswith(MCP_PREFIX):
        return None
    server, sep, tool = name[len(MCP_PREFIX) :].partition(SEPARATOR)
    return (server, tool) if sep and server and tool else None
