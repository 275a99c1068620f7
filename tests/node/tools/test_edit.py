"""Edit: exact-match replacement with the original's match-count errors."""

from __future__ import annotations

import asyncio
from pathlib import Path

from gsv_core.node.tools import Toolset
from tests.node.tools.conftest import failure


async def test_single_occurrence_is_replaced(toolset: Toolset, workspace: Path) -> None:
    """A unique oldString is replaced and the count reported."""
    (workspace / "a.py").write_text("x = 1\ny = 2\n")
    args = {"path": "a.py", "oldString": "y = 2", "newString": "y = 3"}
    result = await toolset.invoke("Edit", args)
    assert result == {"path": str(workspace / "a.py"), "replacements": 1}
    assert (workspace / "a.py").read_text() == "x = 1\ny = 3\n"


async def test_missing_text_is_an_error(toolset: Toolset, workspace: Path) -> None:
    """oldString that does not occur fails with the original's message."""
    (workspace / "a.py").write_text("x = 1\n")
    args = {"path": "a.py", "oldString": "nope", "newString": ""}
    assert await failure(toolset, "Edit", args) == f"oldString not found in '{workspace / 'a.py'}'"


async def test_ambiguous_text_needs_replace_all(toolset: Toolset, workspace: Path) -> None:
    """Several matches without replaceAll fail with the count and the advice; file unchanged."""
    (workspace / "a.txt").write_text("aa aa aa")
    args = {"path": "a.txt", "oldString": "aa", "newString": "b"}
    assert await failure(toolset, "Edit", args) == (
        f"oldString found 3 times in '{workspace / 'a.txt'}'. "
        "Use replaceAll: true or provide more context to make it unique."
    )
    assert (workspace / "a.txt").read_text() == "aa aa aa"


async def test_replace_all_replaces_every_non_overlapping_match(
    toolset: Toolset, workspace: Path
) -> None:
    """replaceAll counts non-overlapping occurrences."""
    (workspace / "a.txt").write_text("aaaa")
    args = {"path": "a.txt", "oldString": "aa", "newString": "b", "replaceAll": True}
    assert (await toolset.invoke("Edit", args))["replacements"] == 2
    assert (workspace / "a.txt").read_text() == "bb"


async def test_empty_old_string_is_refused(toolset: Toolset, workspace: Path) -> None:
    """An empty oldString is an error, with or without replaceAll (the original accepted it)."""
    (workspace / "a.txt").write_text("abc")
    for replace_all in (False, True):
        args = {"path": "a.txt", "oldString": "", "newString": "x", "replaceAll": replace_all}
        assert await failure(toolset, "Edit", args) == "oldString must not be empty"
    assert (workspace / "a.txt").read_text() == "abc"


async def test_missing_file_and_binary_file_are_errors(toolset: Toolset, workspace: Path) -> None:
    """A missing file and a non-UTF-8 file are both refused clearly."""
    args = {"oldString": "a", "newString": "b"}
    missing = await failure(toolset, "Edit", {"path": "nope", **args})
    assert missing == f"Failed to read '{workspace / 'nope'}': No such file or directory"
    (workspace / "bin").write_bytes(b"a\xff")
    binary = await failure(toolset, "Edit", {"path": "bin", **args})
    assert binary == f"'{workspace / 'bin'}' is not a UTF-8 text file; Edit only changes text"


async def test_misspelt_option_is_refused(toolset: Toolset, workspace: Path) -> None:
    """An unknown argument such as replace_all is an error, not silently ignored."""
    args = {"path": "a", "oldString": "a", "newString": "b", "replace_all": True}
    assert await failure(toolset, "Edit", args) == "Invalid arguments: unknown field 'replace_all'"


async def test_concurrent_edits_of_one_file_are_all_kept(toolset: Toolset, workspace: Path) -> None:
    """Parallel Edit calls on one file never lose each other's change."""
    markers = [f"<{i}>" for i in range(20)]
    (workspace / "many.txt").write_text("\n".join(markers))
    await asyncio.gather(
        *(
            toolset.invoke(
                "Edit", {"path": "many.txt", "oldString": m, "newString": m.upper() + "!"}
            )
            for m in markers
        )
    )
    assert (workspace / "many.txt").read_text() == "\n".join(f"{m}!" for m in markers)


async def test_restricted_edit_refuses_a_symlink_out(
    restricted: Toolset, workspace: Path, tmp_path: Path
) -> None:
    """Editing through a symlink that points outside the workspace is refused."""
    target = tmp_path / "outside.txt"
    target.write_text("keep")
    (workspace / "link.txt").symlink_to(target)
    args = {"path": "link.txt", "oldString": "keep", "newString": "lost"}
    assert "is outside the node workspace" in await failure(restricted, "Edit", args)
    assert target.read_text() == "keep"
