"""Owner-only modes: creating 0700/0600 whatever the umask, finding and fixing wider
modes only on paths gsv owns."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from gsv_core import fsmodes
from gsv_core.fsmodes import Root
from gsv_core.fsmodes import find_wide_modes
from gsv_core.fsmodes import gsv_roots
from gsv_core.fsmodes import tighten_modes


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.fixture
def open_umask() -> Iterator[None]:
    """A umask that takes nothing away: modes must come from gsv, not from the umask."""
    previous = os.umask(0)
    yield
    os.umask(previous)


def test_new_dirs_and_files_are_owner_only(tmp_path: Path, open_umask: None) -> None:
    """make_private_dir makes each missing level 0700; files are written 0600."""
    fsmodes.make_private_dir(tmp_path / "a" / "b" / "c")
    assert [mode(tmp_path / p) for p in ("a", "a/b", "a/b/c")] == [0o700] * 3
    fsmodes.write_private_file(tmp_path / "a" / "f", b"data")
    fsmodes.create_private_file(tmp_path / "a" / "g")
    assert (mode(tmp_path / "a/f"), mode(tmp_path / "a/g")) == (0o600, 0o600)
    assert (tmp_path / "a/f").read_bytes() == b"data"
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["b", "f", "g"]  # no temp


def test_an_existing_wide_file_is_narrowed_when_opened(tmp_path: Path) -> None:
    """open_private keeps the content of a file made before and narrows its mode."""
    path = tmp_path / "old.log"
    path.write_text("kept\n")
    path.chmod(0o644)
    os.close(fsmodes.open_private(path, os.O_WRONLY | os.O_APPEND))
    assert (mode(path), path.read_text()) == (0o600, "kept\n")


def test_a_file_where_a_dir_belongs_is_an_error(tmp_path: Path) -> None:
    """make_private_dir does not pretend a file is the directory asked for."""
    (tmp_path / "taken").write_text("")
    with pytest.raises(NotADirectoryError):
        fsmodes.make_private_dir(tmp_path / "taken")


def test_wide_modes_are_found_and_tightened(tmp_path: Path) -> None:
    """Group and other bits are found under a root and removed; owner bits are kept."""
    root = tmp_path / "gsvroot"
    (root / "data").mkdir(parents=True)
    (root / "data" / "run.sh").write_text("")
    (root / "data" / "run.sh").chmod(0o755)
    (root / "data" / "ok").write_text("")
    (root / "data" / "ok").chmod(0o600)
    root.chmod(0o755)
    (root / "data").chmod(0o750)
    found = find_wide_modes([Root(root)])
    assert {(w.path.name, w.mode, w.wanted) for w in found} == {
        ("gsvroot", 0o755, 0o700), ("data", 0o750, 0o700), ("run.sh", 0o755, 0o700),
    }  # fmt: skip
    assert tighten_modes(found) == 3
    assert find_wide_modes([Root(root)]) == []
    assert mode(root / "data" / "run.sh") == 0o700


def test_links_and_other_people_s_paths_are_left_alone(tmp_path: Path) -> None:
    """A symbolic link is not followed; a root of another owner is not walked."""
    outside = tmp_path / "outside.txt"
    outside.write_text("")
    outside.chmod(0o644)
    root = tmp_path / "gsvroot"
    root.mkdir(mode=0o700)
    (root / "link").symlink_to(outside)
    assert find_wide_modes([Root(root)]) == []
    (root / "wide").write_text("")
    (root / "wide").chmod(0o666)
    assert find_wide_modes([Root(root)], uid=os.geteuid() + 1) == []
    assert [w.path.name for w in find_wide_modes([Root(root)])] == ["wide"]


def test_a_shared_sticky_directory_is_never_walked() -> None:
    """/tmp itself (sticky, shared) is skipped with everything in it, whoever owns it."""
    tmp = Path("/tmp")
    if not tmp.stat().st_mode & stat.S_ISVTX:
        pytest.skip("/tmp is not a sticky directory here")
    assert find_wide_modes([Root(tmp)], uid=tmp.stat().st_uid) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_file_owned_by_someone_else_is_not_changed(tmp_path: Path) -> None:
    """Inside a gsv directory, a path owned by another user is not gsv's to chmod."""
    root = tmp_path / "gsvroot"
    root.mkdir(mode=0o700)
    theirs = root / "theirs"
    theirs.write_text("")
    theirs.chmod(0o644)
    os.chown(theirs, 65534, 65534)
    assert find_wide_modes([Root(root)]) == []


def test_gsv_roots_name_only_what_gsv_owns(gsv_home: Path, tmp_path: Path) -> None:
    """GSV_HOME itself, its four directories and, beside a database elsewhere, gsv's own
    entries; a database in the home directory never makes the home a root."""
    roots = {(r.path, r.recursive) for r in gsv_roots(tmp_path / "elsewhere" / "gsv.db")}
    assert (gsv_home, False) in roots and (gsv_home / "data", True) in roots
    assert (tmp_path / "elsewhere", False) in roots
    assert (tmp_path / "elsewhere" / "workspace", True) in roots
    assert (tmp_path / "elsewhere" / "gsv.db-wal", False) in roots
    in_home = {r.path for r in gsv_roots(Path.home() / "gsv.db")}
    assert Path.home() not in in_home and Path.home() / "gsv.db" in in_home
