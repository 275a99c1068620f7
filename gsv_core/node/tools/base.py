"""What every node tool is: a name, a capability, a pydantic params model and `run()`.

`Tool.parse()` turns the agent's raw arguments into the params model, or a ToolFailed
"Invalid arguments: ..." naming each bad field. `Tool.definition()` derives the JSON
schema advertised in the connect handshake from the same model, so the schema and the
validation can never disagree. `Tool.run_now()` lets a tool answer a call that needs no
waiting (a small file) on the spot, without a worker thread. `run_blocking()` moves
disk-bound work off the event loop and tells the worker to stop when the call is
cancelled.
"""

from __future__ import annotations

import asyncio
import threading
from abc import ABC
from abc import abstractmethod
from collections.abc import Callable
from typing import Any
from typing import ClassVar
from typing import Generic
from typing import TypeVar

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import ValidationError

from gsv_core.errors import ToolFailed
from gsv_core.node.tools.workspace import Workspace

P = TypeVar("P", bound="ToolParams")
T = TypeVar("T")

# what `Tool.run_now()` returns when the call needs waiting: `run()` does it then
LATER: Any = object()


class ToolParams(BaseModel):
    """Base of tool arguments: wire (camelCase) names, unknown fields refused."""

    # Refusing unknown fields turns a misspelt argument (`replace_all`) into a clear
    # error instead of a silently ignored option.
    model_config = ConfigDict(extra="forbid")


class Tool(ABC, Generic[P]):
    """One node tool. Subclasses set the class attributes and implement `run()`."""

    name: ClassVar[str]
    description: ClassVar[str]
    capability: ClassVar[str]
    Params: type[P]

    def definition(self) -> dict[str, Any]:
        """`{name, description, inputSchema}` for `connect` (docs/protocol.md#connect)."""
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": input_schema(self.Params),
        }

    def parse(self, args: Any) -> P:
        """Validate raw arguments; ToolFailed("Invalid arguments: ...") when they are bad."""
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise ToolFailed(
                f"Invalid arguments: expected a JSON object, got {type(args).__name__}"
            )
        # Models often send `null` for an option they mean to leave out: treat it so.
        present = {key: value for key, value in args.items() if value is not None}
        try:
            return self.Params.model_validate(present)
        except ValidationError as exc:
            raise ToolFailed(f"Invalid arguments: {describe_errors(exc)}") from None

    @abstractmethod
    async def run(self, params: P) -> Any:
        """Do the work; raise ToolFailed with a message for the agent when it fails."""

    async def run_as(self, params: P, access: str) -> Any:
        """`run()` with the access the node's guard granted the call (SANDBOX or FULL,
        approval/binding.py); only tools that start processes (Bash) tell them apart."""
        return await self.run(params)

    def run_now(self, params: P) -> Any:
        """The result when it can be had at once without blocking the event loop, else
        LATER (the default: `run()` is the only way)."""
        return LATER

    async def close(self) -> None:
        """Release what the tool keeps between calls (Grep's search processes)."""


class WorkspaceTool(Tool[P]):
    """A tool over the node's files (Read, Glob, Grep, Write, Edit): its paths resolve
    against the workspace, which refuses escapes when the node is restricted to it."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace


def describe_errors(exc: ValidationError) -> str:
    """One readable clause per bad field, e.g. "offset must be >= 0 (got -1)"."""
    return "; ".join(_describe(err) for err in exc.errors(include_url=False))


def _describe(err: Any) -> str:
    field = ".".join(str(part) for part in err["loc"]) or "arguments"
    kind, ctx = err["type"], err.get("ctx") or {}
    if kind == "missing":
        return f"'{field}' is required"
    if kind == "extra_forbidden":
        return f"unknown field '{field}'"
    bounds = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<="}
    if kind in bounds:
        limit = next(iter(ctx.values()), "?")
        if isinstance(limit, float) and limit.is_integer():
            limit = int(limit)
        return f"'{field}' must be {bounds[kind]} {limit} (got {err['input']!r})"
    return f"'{field}': {err['msg']}"


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema without pydantic noise (titles, `anyOf [X, null]`)."""
    schema = model.model_json_schema()
    schema.pop("title", None)
    schema["properties"] = {
        name: _clean_property(prop) for name, prop in schema.get("properties", {}).items()
    }
    return schema


def _clean_property(prop: dict[str, Any]) -> dict[str, Any]:
    prop = {key: value for key, value in prop.items() if key != "title"}
    options = prop.pop("anyOf", None)
    if options is not None:
        # `int | None = None` means "optional": advertise the plain type only.
        concrete = [option for option in options if option.get("type") != "null"]
        if len(concrete) == 1:
            prop = {**concrete[0], **prop}
        else:
            prop["anyOf"] = concrete
    if prop.get("default", 0) is None:
        del prop["default"]
    return prop


async def run_blocking(work: Callable[[threading.Event], T]) -> T:
    """Run `work(cancelled)` in a worker thread; set `cancelled` if the caller is cancelled."""
    cancelled = threading.Event()
    try:
        return await asyncio.to_thread(work, cancelled)
    except asyncio.CancelledError:
        cancelled.set()
        raise


class SearchCancelled(Exception):
    """Raised inside a worker thread when its caller was cancelled; never escapes a tool."""


def check_cancelled(cancelled: threading.Event) -> None:
    """Stop a long walk promptly once nobody waits for its result."""
    if cancelled.is_set():
        raise SearchCancelled
