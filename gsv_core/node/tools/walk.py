"""Directory walking for Glob and Grep: symlink-following, loop-safe, confinable.

Entries are listed sorted by name (when asked), so a depth-first walk visits paths in
the order of their component tuples, the order `rg --sort path` uses too. Symlinks are
followed; a directory whose real path is one of its ancestors' is a loop and is not
entered (other repeats, such as two links to one directory, are walked, as ripgrep
does). In a restricted workspace a symlink whose target lies outside is skipped. Entries
whose real path is `hidden` (gsv's secret files) are never listed.
Unreadable directories are skipped silently. Real paths cost a syscall only for symlinks:
a plain directory's real path is its parent's plus its name.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import dataclass

from gsv_core.node.tools.base import check_cancelled


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name


def is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def real_path(entry: os.DirEntry[str], parent_real: str) -> str:
    """The entry's path with every symlink resolved."""
    if entry.is_symlink():
        return os.path.realpath(entry.path)
    return os.path.join(parent_real, entry.name)


@dataclass
class TreeWalker:
    """Lists directory entries for the walks.

    `allows_real` (None when unrestricted) decides whether a symlink's target may be used;
    `skip_names` are never listed, nor entries whose real path is in `hidden`; `sort`
    orders entries by name.
    """

    cancelled: threading.Event
    allows_real: Callable[[str], bool] | None = None
    skip_names: frozenset[str] = frozenset()
    sort: bool = True
    hidden: frozenset[str] = frozenset()

    def entries(self, path: str) -> list[os.DirEntry[str]]:
        check_cancelled(self.cancelled)
        try:
            with os.scandir(path) as found:
                listed = list(found)
        except OSError:
            return []
        if self.sort:
            listed.sort(key=_name)
        if self.skip_names or self.allows_real is not None:
            listed = [entry for entry in listed if self._keep(entry)]
        return listed

    def _keep(self, entry: os.DirEntry[str]) -> bool:
        if entry.name in self.skip_names:
            return False
        if self.allows_real is None:
            return True
        try:
            return not entry.is_symlink() or self.allows_real(os.path.realpath(entry.path))
        except OSError:
            return False

    def files(self, base: str) -> Iterator[str]:
        """Every regular file under `base` (following symlinks), in sorted depth-first order."""
        for entry, _, directory in self.walk(base, lambda entry, depth: True):
            if not directory and entry.is_file():
                yield entry.path

    def walk(
        self, base: str, descend: Callable[[os.DirEntry[str], int], bool]
    ) -> Iterator[tuple[os.DirEntry[str], int, bool]]:
        """(entry, depth, is a directory) for every entry, depth first. A directory is
        entered after being yielded if `descend(entry, depth)` says so and it is no loop."""
        chain = [os.path.realpath(base)]
        ancestors = set(chain)
        stack = [iter(self.entries(base))]
        while stack:
            entry = next(stack[-1], None)
            if entry is None:
                stack.pop()
                ancestors.discard(chain.pop())
                continue
            real = real_path(entry, chain[-1]) if self.hidden else None
            if real in self.hidden:
                continue
            depth, directory = len(stack), is_dir(entry)
            yield entry, depth, directory
            if directory and descend(entry, depth):
                real = real or real_path(entry, chain[-1])
                if real not in ancestors:
                    chain.append(real)
                    ancestors.add(real)
                    stack.append(iter(self.entries(entry.path)))
