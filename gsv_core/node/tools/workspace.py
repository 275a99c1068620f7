"""Where node tools may touch the filesystem: path resolution against the node workspace.

Relative paths (and `~`) resolve against the workspace; absolute paths are used as-is.
With `restrict=True` every resolved path must stay inside the workspace twice over:
lexically (no `..` escape, no absolute path elsewhere) and physically (after following
symlinks, so a link pointing out is refused too). Walks that follow symlinks ask
`allows_real()` for every link they meet. This is a guard against mistakes, not a sandbox
against a hostile local user racing symlinks underneath the node.
"""

from __future__ import annotations

import os
from pathlib import Path

from gsv_core.errors import ToolFailed


class Workspace:
    """The node workspace root and the restriction policy for paths under it."""

    def __init__(self, root: Path | str, *, restrict: bool = False) -> None:
        self.root = os.path.abspath(os.path.expanduser(os.fspath(root)))
        self.restrict = restrict
        self._real_root = os.path.realpath(self.root)

    def resolve(self, path: str | None) -> str:
        """The absolute, normalised path for a tool argument (the workspace when empty)."""
        if not path:
            return self.root
        joined = os.path.join(self.root, os.path.expanduser(path))
        resolved = os.path.normpath(joined)
        if self.restrict:
            self._check(path, resolved)
        return resolved

    def allows_real(self, real_path: str) -> bool:
        """True when a fully resolved path may be used (always, unless restricted)."""
        return not self.restrict or _is_within(real_path, self._real_root)

    def _check(self, given: str, resolved: str) -> None:
        if not _is_within(resolved, self.root):
            raise self._outside(given)
        if not _is_within(os.path.realpath(resolved), self._real_root):
            raise self._outside(given, " through a symlink")

    def _outside(self, given: str, how: str = "") -> ToolFailed:
        return ToolFailed(
            f"path '{given}' is outside the node workspace {self.root}{how} "
            "(the node runs with restrict_to_workspace)"
        )


def _is_within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)
