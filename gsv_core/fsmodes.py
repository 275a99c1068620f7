"""Owner-only file modes for everything gsv keeps on disk (no other local user reads a secret).

Directories gsv creates get 0700 and files 0600, set explicitly at creation (os.open and
mkdir modes), never by changing the process umask: a umask is process-wide and would
also change files the agent's tools write for the user.

    make_private_dir(path)              mkdir -p, every directory it creates 0700
    open_private(path, flags) -> fd     os.open with 0600 (an existing file is narrowed)
    write_private_file(path, data)      atomic write of a 0600 file
    find_wide_modes(roots)              read-only: what is readable beyond the owner
    tighten_modes(found) -> int         chmod those to owner-only
    gsv_roots(database)                 the paths gsv owns (what `gsv security audit` checks)
    tighten_gsv_modes(database) -> int  the start-up pass: find + tighten + one log line

Only paths gsv owns are ever changed: a root owned by another user, a sticky shared
directory (/tmp itself) and symbolic links are skipped, never followed.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
import tempfile
from collections.abc import Iterable
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gsv_core.paths import gsv_home
from gsv_core.paths import resolve_paths

log = logging.getLogger(__name__)

DIR_MODE = 0o700
FILE_MODE = 0o600
_NOT_OWNER = 0o077  # group and other bits
# what lives next to the database in a gateway's data directory (gsv_core.gateway.app)
DATA_DIR_ENTRIES = ("workspace", "media", "bundled-skills.json")
_DB_SUFFIXES = ("", "-wal", "-shm", "-journal")


# -- creating ----------------------------------------------------------------------------


def make_private_dir(path: Path) -> None:
    """Create `path` and any missing parents, each new directory 0700; existing
    directories are left as they are (the start-up pass tightens gsv's own)."""
    missing: list[Path] = []
    current = path
    while not current.exists() and current != current.parent:
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile by another process
            directory.mkdir(mode=DIR_MODE)
    if not path.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(path))


def open_private(path: Path, flags: int) -> int:
    """`os.open(path, flags | O_CREAT)` with mode 0600; a file that already existed with
    wider bits is narrowed through the open descriptor."""
    fd = os.open(path, flags | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), FILE_MODE)
    try:
        mode = os.fstat(fd).st_mode
        if mode & _NOT_OWNER:
            os.fchmod(fd, stat.S_IMODE(mode) & ~_NOT_OWNER)
    except BaseException:
        os.close(fd)
        raise
    return fd


def create_private_file(path: Path) -> None:
    """Make sure `path` exists as a 0600 file (contents kept), before a library that
    creates files with the umask's mode (sqlite, logging) opens it."""
    make_private_dir(path.parent)
    os.close(open_private(path, os.O_WRONLY | os.O_APPEND))


def write_private_file(path: Path, data: bytes) -> None:
    """Replace `path` atomically (temp file in the same directory, then rename) with a
    0600 file holding `data`."""
    make_private_dir(path.parent)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:  # mkstemp creates it 0600
            handle.write(data)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


# -- finding and fixing wider modes ------------------------------------------------------


@dataclass(frozen=True)
class Root:
    """A path gsv owns; `recursive`: everything below it is gsv's too."""

    path: Path
    recursive: bool = True


@dataclass(frozen=True)
class WideMode:
    """A path readable, writable or searchable by someone other than its owner."""

    path: Path
    mode: int  # the permission bits it has
    wanted: int  # the owner-only bits it should have

    def describe(self) -> str:
        return f"{self.path} is {self.mode:04o}, should be {self.wanted:04o}"


def owner_only(mode: int) -> int:
    """The permission bits of `mode` with every group and other bit removed."""
    return stat.S_IMODE(mode) & ~_NOT_OWNER


def find_wide_modes(roots: Iterable[Root], uid: int | None = None) -> list[WideMode]:
    """Every path under `roots` (the roots included) with group or other bits, owned by
    `uid` (default: this process's user). Changes nothing."""
    owner = os.geteuid() if uid is None else uid
    found: list[WideMode] = []
    for root in roots:
        found.extend(_wide_under(root, owner))
    return found


def _wide_under(root: Root, owner: int) -> Iterator[WideMode]:
    try:
        st = os.lstat(root.path)
    except OSError:
        return  # not there (yet): nothing to tighten
    if not _ours(st, owner) or (stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX):
        return  # someone else's, or a shared sticky directory such as /tmp itself
    yield from _check(root.path, st)
    if root.recursive and stat.S_ISDIR(st.st_mode):
        yield from _walk(root.path, owner)


def _walk(directory: Path, owner: int) -> Iterator[WideMode]:
    try:
        entries = list(os.scandir(directory))
    except OSError as exc:
        log.debug("cannot list %s: %s", directory, exc)
        return
    for entry in entries:
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue  # removed meanwhile
        if not _ours(st, owner):
            continue  # not gsv's to change, nor what is inside it
        yield from _check(Path(entry.path), st)
        if stat.S_ISDIR(st.st_mode):
            yield from _walk(Path(entry.path), owner)


def _ours(st: os.stat_result, owner: int) -> bool:
    # a link's own bits mean nothing and what it points to may not be gsv's
    return st.st_uid == owner and not stat.S_ISLNK(st.st_mode)


def _check(path: Path, st: os.stat_result) -> Iterator[WideMode]:
    if st.st_mode & _NOT_OWNER:
        yield WideMode(path, stat.S_IMODE(st.st_mode), owner_only(st.st_mode))


def tighten_modes(found: Iterable[WideMode]) -> int:
    """chmod each path to its owner-only mode; returns how many were changed."""
    fixed = 0
    for wide in found:
        try:
            os.chmod(wide.path, wide.wanted)  # find_wide_modes never yields a link
        except OSError as exc:
            log.warning("could not make %s owner-only: %s", wide.path, exc)
            continue
        fixed += 1
    return fixed


def gsv_roots(database: Path | None = None) -> list[Root]:
    """The paths gsv owns: GSV_HOME itself, its config, data, log and run directories
    with everything in them, and the files gsv keeps beside `database` (a gateway's
    data directory may be any directory the user chose, so only gsv's entries in it)."""
    paths = resolve_paths()
    roots = [Root(p) for p in (paths.config_dir, paths.data_dir, paths.log_dir, paths.run_dir)]
    home = gsv_home()
    if home is not None:
        roots.insert(0, Root(home, recursive=False))
    if database is not None and database.parent != paths.data_dir:
        roots.extend(_data_dir_roots(database))
    return roots


def _data_dir_roots(database: Path) -> list[Root]:
    data_dir = database.parent
    roots = [Root(Path(f"{database}{suffix}"), recursive=False) for suffix in _DB_SUFFIXES]
    roots.extend(Root(data_dir / name) for name in DATA_DIR_ENTRIES)
    if data_dir != Path.home():  # never narrow someone's home because the db sits there
        roots.insert(0, Root(data_dir, recursive=False))
    return roots


def tighten_gsv_modes(database: Path | None = None) -> int:
    """Make everything gsv owns owner-only; one log line when anything was changed.
    Blocking (it walks the workspace): call it from a thread in async code."""
    fixed = tighten_modes(find_wide_modes(gsv_roots(database)))
    if fixed:
        log.warning("tightened %d path(s) gsv keeps to owner-only modes (0700/0600)", fixed)
    return fixed
