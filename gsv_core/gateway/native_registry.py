"""The registry of native tools: each has a `gsv__` name (docs/tools.md), a description, a pydantic
params model (its JSON schema is what the model sees) and an async handler that returns
the tool's result or raises a GsvError whose message the model reads."""

from __future__ import annotations

import functools
from collections.abc import Awaitable
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from typing import Generic
from typing import TypeVar

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import ValidationError

from gsv_core.agent.tools import ToolCallContext
from gsv_core.errors import InvalidParams
from gsv_core.errors import NotFound
from gsv_core.protocol.schemas.connect import object_schema
from gsv_core.providers.base import ToolSpec

NATIVE_PREFIX = "gsv__"

P = TypeVar("P", bound=BaseModel)


class NativeArgs(BaseModel):
    """Base of native tool params: unknown fields are refused so typos are caught."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class NativeTool(Generic[P]):
    name: str
    description: str
    params: type[P]
    handler: Callable[[P, ToolCallContext], Awaitable[Any]]

    def spec(self) -> ToolSpec:
        return _spec_of(self.name, self.description, self.params)

    async def run(self, args: dict[str, Any], ctx: ToolCallContext) -> Any:
        try:
            params = self.params.model_validate(args)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'args'}: {e['msg']}" for e in exc.errors()
            )
            raise InvalidParams(f"Invalid arguments: {problems}") from None
        return await self.handler(params, ctx)


class NativeToolRegistry:
    def __init__(self) -> None:
        self._tools: dict[str, NativeTool[Any]] = {}

    def add(self, tool: NativeTool[Any]) -> None:
        if not tool.name.startswith(NATIVE_PREFIX):
            raise ValueError(f"native tool {tool.name!r} must start with {NATIVE_PREFIX}")
        if tool.name in self._tools:
            raise ValueError(f"native tool {tool.name!r} registered twice")
        self._tools[tool.name] = tool

    def specs(self) -> list[ToolSpec]:
        return [tool.spec() for tool in self._tools.values()]

    def names(self) -> list[str]:
        return list(self._tools)

    async def run(self, name: str, args: dict[str, Any], ctx: ToolCallContext) -> Any:
        tool = self._tools.get(name)
        if tool is None:
            raise NotFound(f"Unknown native tool: {name}")
        return await tool.run(args, ctx)


@functools.cache
def _spec_of(name: str, description: str, params: type[BaseModel]) -> ToolSpec:
    """A tool's spec, built once (JSON-schema generation is slow and never changes)."""
    schema = params.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return ToolSpec(name, description, object_schema(schema))
