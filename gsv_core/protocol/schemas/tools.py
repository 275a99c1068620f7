"""`tools.list` result (docs/protocol.md#methods)."""

from __future__ import annotations

from gsv_core.protocol.schemas import WireModel
from gsv_core.protocol.schemas.connect import ToolDefinition


class ToolsListResult(WireModel):
    tools: list[ToolDefinition]
