"""Node tools kept once, however many nodes offer them.

Nodes of one gsv version offer the same seven tools with the same schemas; a thousand of
them used to hold seven thousand copies (parsed models, the catalog's wire dicts, the
encoded `tools.list` items: tens of KB per node). `ToolShelf.share` hands every node the
one `SharedTool` for a definition it has seen (keyed by its JSON text), and forgets a
definition once no node holds it. `SharedTool.item` is the encoded `tools.list` item for
a node: only the namespaced name is encoded per node.
"""

from __future__ import annotations

import weakref

from gsv_core.protocol.frames import encode_json
from gsv_core.protocol.schemas.connect import ToolDefinition
from gsv_core.protocol.schemas.nodes import TOOL_SEPARATOR


class SharedTool:
    """One tool definition, its wire dict (the catalog's) and its encoded item's tail."""

    __slots__ = ("__weakref__", "definition", "tail", "wire")

    def __init__(self, definition: ToolDefinition, wire: dict[str, object]) -> None:
        self.definition = definition
        self.wire = wire
        # `tools.list` item after its name, as encoding the whole item would write it
        rest = {"description": definition.description, "inputSchema": definition.inputSchema}
        self.tail = encode_json(rest)[1:]

    def item(self, node_id: str) -> str:
        name = encode_json(f"{node_id}{TOOL_SEPARATOR}{self.definition.name}")
        return f'{{"name":{name},{self.tail}'


class ToolShelf:
    """The definitions online nodes offer, each kept once."""

    def __init__(self) -> None:
        self._tools: weakref.WeakValueDictionary[str, SharedTool] = weakref.WeakValueDictionary()

    def share(self, tools: list[ToolDefinition]) -> list[SharedTool]:
        shared = []
        for tool in tools:
            wire = tool.to_wire()
            key = encode_json(wire)
            kept = self._tools.get(key)
            if kept is None:
                kept = self._tools[key] = SharedTool(tool, wire)
            shared.append(kept)
        return shared

    def __len__(self) -> int:
        return len(self._tools)
