"""`tools.list` result (seed 001 "Tools")."""

from __future__ import annotations

from gsv_core.protocol.schemas import WireModel
from gsv_core.protocol.schemas.connect import ToolDefinition


class ToolsListResult(WireModel):
    tools: list[ToolDefinition]
