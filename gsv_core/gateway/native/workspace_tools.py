"""`gsv__ReadFile`, `gsv__WriteFile`, `gsv__EditFile`, `gsv__DeleteFile` (docs/tools.md):
the calling session's agent reads and rewrites its own workspace. ReadFile also reads
parts of large files (startLine/endLine, search with contextLines, jsonPath), as the peer catalog's
artifact reader does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from gsv_core.agent.tools import ToolCallContext
from gsv_core.gateway.native_registry import NativeArgs, NativeTool, NativeToolRegistry
from gsv_core.workspace.excerpts import MAX_CONTEXT_LINES, ReadQuery

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway


class ReadFileArgs(NativeArgs):
    path: str | None = Field(
        default=None,
        description='Path relative to your workspace root; omit or "/" to list the root. '
        'E.g. "SOUL.md", "memory/", "skills/summarize/SKILL.md".',
    )
    startLine: int | None = Field(default=None, ge=1, description="First line to return (1-based).")
    endLine: int | None = Field(default=None, ge=1, description="Last line to return (inclusive).")
    search: str | None = Field(
        default=None,
        min_length=1,
        description="Return only lines containing this text (case-insensitive), numbered.",
    )
    contextLines: int = Field(
        default=2, ge=0, le=MAX_CONTEXT_LINES, description="Lines of context around each match."
    )
    jsonPath: str | None = Field(
        default=None, description='Return the value at this path of a JSON file, e.g. "a.b[0]".'
    )


class WriteFileArgs(NativeArgs):
    path: str = Field(description="File path relative to your workspace root.")
    content: str = Field(description="The complete new content of the file.")


class EditFileArgs(NativeArgs):
    path: str = Field(description="File path relative to your workspace root.")
    oldString: str = Field(description="Exact text to find (must not be empty).")
    newString: str = Field(description="Replacement text.")
    replaceAll: bool = Field(
        default=False,
        description="Replace every occurrence; otherwise oldString must occur exactly once.",
    )


class DeleteFileArgs(NativeArgs):
    path: str = Field(description="File path relative to your workspace root.")


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
            "Read a file or list a directory in the agent's workspace. For large files pass "
            "startLine/endLine, search (with contextLines) or jsonPath to get only a part.",
            ReadFileArgs,
            read_file,
        ),
        NativeTool(
            "gsv__WriteFile",
            "Write or create a file in the agent's workspace. Writing under skills/ creates "
            "the agent's own copy of the skill.",
            WriteFileArgs,
            write_file,
        ),
        NativeTool(
            "gsv__EditFile",
            "Edit a file by replacing exact text matches. oldString must match once unless "
            "replaceAll is true; editing a global skill saves the agent's own copy.",
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
