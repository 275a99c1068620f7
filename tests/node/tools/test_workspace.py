"""Workspace: relative paths resolve against the root; restriction refuses every escape."""

from __future__ import annotations

from pathlib import Path

import pytest

from gsv_core.errors import ToolFailed
from gsv_core.node.tools.workspace import Workspace


def test_relative_paths_resolve_against_the_workspace(workspace: Path) -> None:
    """Relative paths join the root and are normalised; empty means the root."""
    ws = Workspace(workspace)
    assert ws.resolve("a/./b/../c.txt") == str(workspace / "a/c.txt")
    assert ws.resolve(None) == ws.resolve("") == str(workspace)


def test_unrestricted_paths_may_go_anywhere(workspace: Path, tmp_path: Path) -> None:
    """Without restriction absolute paths and `..` are used as given (the original's rule)."""
    ws = Workspace(workspace)
    assert ws.resolve("/etc/hosts") == "/etc/hosts"
    assert ws.resolve("../x") == str(tmp_path / "x")


def test_home_is_expanded(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`~/x` means the user's home, not a directory named "~" in the workspace."""
    monkeypatch.setenv("HOME", str(workspace / "home"))
    assert Workspace(workspace).resolve("~/notes.md") == str(workspace / "home/notes.md")


@pytest.mark.parametrize("path", ["..", "../ws-other/x", "a/../../x", "/etc/passwd"])
def test_restriction_refuses_lexical_escapes(workspace: Path, path: str) -> None:
    """`..` escapes and absolute paths outside are refused with a clear message."""
    with pytest.raises(ToolFailed) as caught:
        Workspace(workspace, restrict=True).resolve(path)
    assert caught.value.message == (
        f"path '{path}' is outside the node workspace {workspace} "
        "(the node runs with restrict_to_workspace)"
    )


def test_restriction_refuses_symlinks_pointing_out(workspace: Path, tmp_path: Path) -> None:
    """A symlink inside the workspace that leads outside is refused, also for new children."""
    (tmp_path / "elsewhere").mkdir()
    (workspace / "out").symlink_to(tmp_path / "elsewhere")
    ws = Workspace(workspace, restrict=True)
    for path in ("out", "out/new-file.txt"):
        with pytest.raises(ToolFailed, match=r"outside the node workspace .* through a symlink"):
            ws.resolve(path)


def test_restriction_allows_paths_and_links_inside(workspace: Path) -> None:
    """Absolute paths inside, not-yet-existing files and links within the root are fine."""
    (workspace / "real").mkdir()
    (workspace / "alias").symlink_to(workspace / "real")
    ws = Workspace(workspace, restrict=True)
    assert ws.resolve(str(workspace / "new/file")) == str(workspace / "new/file")
    assert ws.resolve("alias/x") == str(workspace / "alias/x")
    assert ws.resolve(".") == str(workspace)


def test_a_workspace_reached_through_a_symlink_still_works(tmp_path: Path) -> None:
    """When the root itself is a symlink, paths inside it are inside."""
    (tmp_path / "actual").mkdir()
    (tmp_path / "root-link").symlink_to(tmp_path / "actual")
    ws = Workspace(tmp_path / "root-link", restrict=True)
    assert ws.resolve("x.txt") == str(tmp_path / "root-link/x.txt")
    assert ws.allows_real(str(tmp_path / "actual/x.txt"))
    assert not ws.allows_real(str(tmp_path / "actual-not"))
