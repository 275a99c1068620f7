"""The Write tool: create or overwrite a file with UTF-8 text, creating parent directories."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any
from typing import TypeVar

from pydantic import Field

from gsv_core.errors import ToolFailed
from gsv_core.node.tools.base import P
from gsv_core.node.tools.base import ToolParams
from gsv_core.node.tools.base import WorkspaceTool
from gsv_core.node.tools.base import run_blocking
from gsv_core.node.tools.workspace import Workspace
from gsv_core.workspace.locks import KeyLocks

T = TypeVar("T")


class FileChangeTool(WorkspaceTool[P]):
    """A tool that changes one file (Write, Edit): changes of one file happen one at a
    time, so two calls in the same turn never lose one another's update."""

    def __init__(self, workspace: Workspace, locks: KeyLocks) -> None:
        super().__init__(workspace)
        self.locks = locks

    async def change(self, path: str, work: Callable[[str], T]) -> tuple[str, T]:
        """The resolved `path` and what `work(resolved)` returned, run in a worker thread
        while the file's lock is held."""
        resolved = await asyncio.to_thread(self.workspace.resolve, path)
        async with self.locks.hold(resolved):
            return resolved, await run_blocking(lambda _: work(resolved))


class WriteParams(ToolParams):
    path: str = Field(description="File to write.")
    content: str = Field(description="The whole new content.")


class WriteTool(FileChangeTool[WriteParams]):
    name = "Write"
    capability = "filesystem.write"
    description = "Write a file on this node (UTF-8), replacing it and creating parent directories."
    Params = WriteParams

    async def run(self, params: WriteParams) -> dict[str, Any]:
        data = params.content.encode("utf-8")
        path, _ = await self.change(params.path, lambda path: write_file(path, data))
        return {"path": path, "bytes": len(data)}


def write_file(path: str, data: bytes) -> None:
    """Replace the contents of `path` (keeping its mode and links), creating parents."""
    if os.path.isdir(path):
        raise ToolFailed(f"'{path}' is a directory")
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    except OSError as exc:
        raise ToolFailed(
            f"Failed to create parent directories of '{path}': {exc.strerror or exc}"
        ) from None
    try:
        with open(path, "wb") as handle:
            handle.write(data)
    except OSError as exc:
        raise ToolFailed(f"Failed to write '{path}': {exc.strerror or exc}") from None
