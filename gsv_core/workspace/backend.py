"""Where workspace files are kept: the `StorageBackend` protocol (list, read, write,
delete, stat over `/`-separated keys) and `FilesystemBackend`, the default, over a
directory.

Keys reach a backend already checked by `paths.normalise_path()`. The filesystem backend
adds what only it can see: a key must stay inside its scope (`paths.scope_of`: the agent
root, or `skills/`) after symlinks are resolved, so a link pointing elsewhere is refused
with a 400 rather than followed. Writes go to a temp file in the target directory that is
fsynced and then renamed over the target, so a reader or a concurrent writer never sees
a torn file. Deleting a file also removes the folders it leaves empty (up to its scope),
as an object store would. This guards against paths, not against a local user racing
symlinks underneath the gateway.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISDIR
from stat import S_ISLNK
from typing import Protocol

from gsv_core.errors import InvalidParams
from gsv_core.fsmodes import make_private_dir
from gsv_core.workspace.paths import TEMP_PREFIX
from gsv_core.workspace.paths import parent_of
from gsv_core.workspace.paths import scope_of


@dataclass(frozen=True)
class Stat:
    is_dir: bool
    size: int  # bytes (0 for folders)
    mtime_ns: int


@dataclass(frozen=True)
class Listing:
    """The direct children of a folder, by name, sorted."""

    files: list[str]
    directories: list[str]


class StorageBackend(Protocol):
    def stat(self, key: str) -> Stat | None:
        """The file or folder at `key`; None when there is none."""
        ...

    def stat_many(self, keys: Sequence[str]) -> dict[str, Stat | None]:
        """`stat` of each key at once (the files a system prompt injects, every turn); a
        key that `stat` refuses is left out."""
        ...

    def list(self, key: str) -> Listing | None:
        """The folder's direct children (`""` is the top); None when it is no folder."""
        ...

    def read(self, key: str) -> tuple[bytes, Stat] | None:
        """The file's bytes and its stat, read at once; None when there is no file."""
        ...

    def write(self, key: str, data: bytes) -> Stat:
        """Create or replace the file atomically, with any missing parent folders."""
        ...

    def files(self, key: str) -> dict[str, Stat]:
        """Every file under the folder, at any depth, by its path relative to it, with its
        stat, in one pass (symlinks are left out); empty when it is no folder."""
        ...

    def folders_of(self, keys: Sequence[str]) -> set[str]:
        """Real folder paths a change in which can change what `stat` or `read` of `keys`
        gives (watched, workspace/fresh_prompts.py); empty when the backend has none."""
        ...

    def delete(self, key: str) -> bool:
        """Remove the file; False when there is none. Folders are refused."""
        ...


class FilesystemBackend:
    """Workspace keys as files under `root`."""

    def __init__(self, root: Path) -> None:
        make_private_dir(root)
        self.root = os.path.realpath(root)

    # -- the protocol -------------------------------------------------------------------
    def stat(self, key: str) -> Stat | None:
        try:
            st = os.stat(self.real_path(key))
        except (FileNotFoundError, NotADirectoryError):
            return None
        return _stat_of(st)

    def stat_many(self, keys: Sequence[str]) -> dict[str, Stat | None]:
        # each folder's real path once, then one lstat a file: resolving every key whole
        # (two realpaths, an lstat per component) cost 0.8 ms a turn for a prompt's files
        folders: dict[str, str | None] = {}
        found: dict[str, Stat | None] = {}
        for key in keys:
            folder = parent_of(key)
            if folder not in folders:
                try:
                    folders[folder] = self.real_path(folder) if folder else None
                except InvalidParams:
                    folders[folder] = None  # `stat` refuses each of its keys below
            try:
                found[key] = self._stat_in(folders[folder], key)
            except InvalidParams:
                continue
        return found

    def _stat_in(self, real_folder: str | None, key: str) -> Stat | None:
        """`stat(key)`, knowing its folder's checked real path: a file that is no symlink
        is that folder's (only a symlink, or an unchecked folder, is resolved whole)."""
        if real_folder is None:
            return self.stat(key)
        try:
            st = os.lstat(os.path.join(real_folder, key.rpartition("/")[2]))
        except (FileNotFoundError, NotADirectoryError):
            return None
        return self.stat(key) if S_ISLNK(st.st_mode) else _stat_of(st)

    def list(self, key: str) -> Listing | None:
        files: list[str] = []
        directories: list[str] = []
        try:
            with os.scandir(self.real_path(key)) as entries:
                for entry in entries:
                    if entry.name.startswith(TEMP_PREFIX):
                        continue
                    (directories if entry.is_dir() else files).append(entry.name)
        except (FileNotFoundError, NotADirectoryError):
            return None
        return Listing(sorted(files), sorted(directories))

    def files(self, key: str) -> dict[str, Stat]:
        found: dict[str, Stat] = {}
        folders = [("", self.real_path(key))]
        while folders:
            relative, folder = folders.pop()
            try:
                entries = list(os.scandir(folder))
            except (FileNotFoundError, NotADirectoryError):
                continue
            for entry in entries:
                if entry.name.startswith(TEMP_PREFIX) or entry.is_symlink():
                    continue
                path = f"{relative}/{entry.name}" if relative else entry.name
                if entry.is_dir(follow_symlinks=False):
                    folders.append((path, entry.path))
                elif entry.is_file(follow_symlinks=False):
                    st = entry.stat(follow_symlinks=False)
                    found[path] = Stat(False, st.st_size, st.st_mtime_ns)
        return found

    def read(self, key: str) -> tuple[bytes, Stat] | None:
        try:
            with open(self.real_path(key), "rb") as handle:
                st = os.fstat(handle.fileno())
                return handle.read(), Stat(False, st.st_size, st.st_mtime_ns)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None

    def write(self, key: str, data: bytes) -> Stat:
        target = self.real_path(key)
        if os.path.isdir(target):
            raise InvalidParams(f"{key} is a folder; give a file name inside it")
        folder = os.path.dirname(target)
        self._make_folders(folder, key)
        fd, temp = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=folder)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
            raise
        _fsync_folder(folder)  # the rename itself survives a crash too
        st = os.stat(target)
        return Stat(False, st.st_size, st.st_mtime_ns)

    def delete(self, key: str) -> bool:
        self.real_path(key)  # a link that leads out is refused, not removed
        name = key.rpartition("/")[2]
        target = os.path.join(self.real_path(parent_of(key)), name)
        try:
            if os.path.isdir(target) and not os.path.islink(target):
                raise InvalidParams(f"{key} is a folder; delete the files in it one by one")
            os.unlink(target)  # a symlink itself is removed, never what it points to
        except (FileNotFoundError, NotADirectoryError):
            return False
        self._prune(parent_of(key), scope_of(key))
        return True

    # -- confinement --------------------------------------------------------------------
    def folders_of(self, keys: Sequence[str]) -> set[str]:
        # each key's folder, or while it is missing its nearest folder (where it would
        # appear); and a symlinked file's target folder (where an edit of it happens)
        folders: set[str] = set()
        for key in keys:
            lexical = os.path.join(self.root, *key.split("/"))
            holder = os.path.realpath(os.path.dirname(lexical))  # the folder of its name
            target = os.path.dirname(os.path.realpath(lexical))
            folders.update((_nearest_folder(holder), _nearest_folder(target)))
        return folders

    def real_path(self, key: str) -> str:
        """The key's real path, symlinks resolved; InvalidParams when that leaves the key's
        scope. Public for callers that stream to files directly (file transfers)."""
        lexical = os.path.join(self.root, *key.split("/")) if key else self.root
        real = os.path.realpath(lexical)
        scope = os.path.realpath(os.path.join(self.root, *scope_of(key).split("/")))
        if not _is_within(real, scope):
            raise InvalidParams(f"{key} leads outside its workspace through a symbolic link")
        return real

    def _make_folders(self, folder: str, key: str) -> None:
        try:
            make_private_dir(Path(folder))
        except (FileExistsError, NotADirectoryError):
            raise InvalidParams(
                f"cannot write {key}: a file stands where a folder is needed"
            ) from None

    def _prune(self, folder_key: str, scope: str) -> None:
        """Remove folders left empty, from `folder_key` up to (not including) `scope`."""
        while folder_key and folder_key != scope and folder_key.startswith(scope + "/"):
            try:
                os.rmdir(os.path.join(self.root, *folder_key.split("/")))
            except OSError:
                return  # not empty (or gone): stop climbing
            folder_key = parent_of(folder_key)


def _nearest_folder(path: str) -> str:
    """`path` if it is a folder, else its nearest ancestor that is."""
    while not os.path.isdir(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path


def _stat_of(st: os.stat_result) -> Stat:
    is_dir = S_ISDIR(st.st_mode)
    return Stat(is_dir, 0 if is_dir else st.st_size, st.st_mtime_ns)


def _fsync_folder(folder: str) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _is_within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)
