"""The Edit tool: replace exact text in a UTF-8 file.

Without `replaceAll` the old text must occur exactly once (the match-count error
tells the agent how to disambiguate). An empty `oldString` is refused: the original
accepted it and, with replaceAll, inserted the new text between every character.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from gsv_core.errors import ToolFailed
from gsv_core.node.tools.base import ToolParams
from gsv_core.node.tools.write import FileChangeTool
from gsv_core.node.tools.write import write_file


class EditParams(ToolParams):
    path: str = Field(description="File to edit.")
    oldString: str = Field(description="Exact text (not empty); must occur once unless replaceAll.")
    newString: str = Field(description="Replacement text.")
    replaceAll: bool = Field(False, description="Replace every occurrence.")


class EditTool(FileChangeTool[EditParams]):
    name = "Edit"
    capability = "filesystem.edit"
    description = (
        "Edit a text file on this node by exact string replacement; include surrounding "
        "lines to make oldString unique."
    )
    Params = EditParams

    async def run(self, params: EditParams) -> dict[str, Any]:
        if not params.oldString:
            raise ToolFailed("oldString must not be empty")
        path, replacements = await self.change(params.path, lambda path: edit_file(path, params))
        return {"path": path, "replacements": replacements}


def edit_file(path: str, params: EditParams) -> int:
    """Apply the replacement to `path` and return how many occurrences were replaced."""
    text = _read_text(path)
    found = text.count(params.oldString)
    if found == 0:
        raise ToolFailed(f"oldString not found in '{path}'")
    if found > 1 and not params.replaceAll:
        raise ToolFailed(
            f"oldString found {found} times in '{path}'. "
            "Use replaceAll: true or provide more context to make it unique."
        )
    count = found if params.replaceAll else 1
    write_file(path, text.replace(params.oldString, params.newString, count).encode("utf-8"))
    return count


def _read_text(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except IsADirectoryError:
        raise ToolFailed(f"'{path}' is a directory, not a file") from None
    except OSError as exc:
        raise ToolFailed(f"Failed to read '{path}': {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolFailed(f"'{path}' is not a UTF-8 text file; Edit only changes text") from None
