"""`gsv__ReadFile`, `gsv__WriteFile`, `gsv__EditFile`, `gsv__DeleteFile` (docs/tools.md):
the calling session's agent reads and rewrites its own workspace. ReadFile also reads
parts of large files (startLine/endLine, search with contextLines, jsonPath), as the peer catalog's
artifact reader does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from pydantic import Field

from gsv_core.agent.tools import ToolCallContext
from gsv_core.gateway.native_registry import NativeArgs
from gsv_core.gateway.native_registry import NativeTool
from gsv_core.gateway.native_registry import NativeToolRegistry
from gsv_core.workspace.excerpts import MAX_CONTEXT_LINES
from gsv_core.workspace.excerpts import ReadQuery

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway


class ReadFileArgs(NativeArgs):
    path: str | None = Field(
        default=None,
        description='Omit or "/" to list the root.',
    )
    startLine: int | None = Field(default=None, ge=1, description="1-based.")
    endLine: int | None = Field(default=None, ge=1, description="Inclusive.")
    search: str | None = Field(
        default=None,
        min_length=1,
        description="Only lines containing this text (case-insensitive).",
    )
    contextLines: int = Field(
        default=2, ge=0, le=MAX_CONTEXT_LINES, description="Lines around each match."
    )
    jsonPath: str | None = Field(
        default=None, description='The value at this path of a JSON file, e.g. "a.b[0]".'
    )


# Paths are relative to the workspace root, as the system prompt's Workspace section says
# (gsv_core/workspace/prompt.py): a description per path would repeat it in every request.
class WriteFileArgs(NativeArgs):
    path: str
    content: str


class EditFileArgs(NativeArgs):
    path: str
    oldString: str = Field(
        description="Exact text to find (not empty); must occur once unless replaceAll."
    )
    newString: str
    replaceAll: bool = False


class DeleteFileArgs(NativeArgs):
    path: str


def register(registry: NativeToolRegistry, gateway: Gateway) -> None:
    async def read_file(args: ReadFileArgs, ctx: ToolCallContext) -> dict[str, Any]:
        query = ReadQuery(
            args.startLine, args.endLine, args.search, args.contextLines, args.jsonPath
        )
        return await gateway.workspace.read(ctx.agent_id, args.path or "", query)

    async def write_file(args: WriteFileArgs, ctx: ToolCallContext) -> dict[str, Any]:
        return await gateway.workspace.write(ctx.agent_id, args.path, args.content)

    async def edit_file(args: EditFileArgs, ctx: ToolCallContext) -> dict[str, Any]:
        return await gateway.workspace.edit(
            ctx.agent_id, args.path, args.oldString, args.newString, args.replaceAll
        )

    async def delete_file(args: DeleteFileArgs, ctx: ToolCallContext) -> dict[str, Any]:
        return await gateway.workspace.delete(ctx.agent_id, args.path)

    for tool in (
        NativeTool(
            "gsv__ReadFile",
            "Read a file or list a directory in the agent's workspace.",
            ReadFileArgs,
            read_file,
        ),
        NativeTool(
            "gsv__WriteFile",
            "Write or create a file in the agent's workspace.",
            WriteFileArgs,
            write_file,
        ),
        NativeTool(
            "gsv__EditFile",
            "Edit a file by replacing exact text matches.",
            EditFileArgs,
            edit_file,
        ),
        NativeTool(
            "gsv__DeleteFile",
            "Delete a file from the agent's workspace.",
            DeleteFileArgs,
            delete_file,
        ),
    ):
        registry.add(tool)
