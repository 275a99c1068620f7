"""Write: create or overwrite files, creating parents, reporting bytes written."""

from __future__ import annotations

from pathlib import Path

from gsv_core.node.tools import Toolset
from tests.node.tools.conftest import failure


async def test_write_creates_parent_directories(toolset: Toolset, workspace: Path) -> None:
    """Missing parents are created and the resolved path is returned."""
    result = await toolset.invoke("Write", {"path": "a/b/c.txt", "content": "hi\n"})
    assert result == {"path": str(workspace / "a/b/c.txt"), "bytes": 3}
    assert (workspace / "a/b/c.txt").read_text() == "hi\n"


async def test_bytes_counts_utf8_bytes_not_characters(toolset: Toolset, workspace: Path) -> None:
    """ "é€" is 2 characters and 5 bytes of UTF-8; line ends are written as given."""
    result = await toolset.invoke("Write", {"path": "u.txt", "content": "é€\r\n"})
    assert result["bytes"] == 7
    assert (workspace / "u.txt").read_bytes() == "é€\r\n".encode()


async def test_write_overwrites_and_keeps_the_file_mode(toolset: Toolset, workspace: Path) -> None:
    """An existing file is replaced in place: shorter content, same permissions."""
    target = workspace / "run.sh"
    target.write_text("#!/bin/sh\necho a long old body\n")
    target.chmod(0o755)
    await toolset.invoke("Write", {"path": "run.sh", "content": "new\n"})
    assert target.read_text() == "new\n"
    assert target.stat().st_mode & 0o777 == 0o755


async def test_writing_a_directory_is_an_error(toolset: Toolset, workspace: Path) -> None:
    """A path naming a directory is refused."""
    (workspace / "d").mkdir()
    message = await failure(toolset, "Write", {"path": "d", "content": "x"})
    assert message == f"'{workspace / 'd'}' is a directory"


async def test_unwritable_parent_is_a_clear_error(toolset: Toolset, workspace: Path) -> None:
    """A parent that is a file cannot hold the new file; the error names the path."""
    (workspace / "file").write_text("x")
    message = await failure(toolset, "Write", {"path": "file/child.txt", "content": "x"})
    assert message.startswith(
        f"Failed to create parent directories of '{workspace}/file/child.txt'"
    )


async def test_content_is_required(toolset: Toolset) -> None:
    """Missing content is invalid arguments; a wrong type too."""
    assert (
        await failure(toolset, "Write", {"path": "a"}) == "Invalid arguments: 'content' is required"
    )
    message = await failure(toolset, "Write", {"path": "a", "content": 5})
    assert message == "Invalid arguments: 'content': Input should be a valid string"


async def test_restricted_write_refuses_escapes(
    restricted: Toolset, workspace: Path, tmp_path: Path
) -> None:
    """Writes through `..`, to absolute paths outside, or into a symlinked dir out are refused."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "out").symlink_to(outside)
    for path in ("../x.txt", str(tmp_path / "x.txt"), "out/x.txt"):
        message = await failure(restricted, "Write", {"path": path, "content": "x"})
        assert "is outside the node workspace" in message
    assert list(outside.iterdir()) == []
    assert not (tmp_path / "x.txt").exists()
