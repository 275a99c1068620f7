"""FolderWatch (workspace/folder_watch.py): the kernel's word on which watched folders
changed, on real folders in a tmp dir (Linux inotify; skipped where there is none)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from gsv_core.workspace.folder_watch import FolderWatch


@pytest.fixture
def watch() -> Iterator[FolderWatch]:
    opened = FolderWatch.open()
    if opened is None:
        pytest.skip("no inotify on this system")
    yield opened
    opened.close()


def test_nothing_changed_is_an_empty_set(watch: FolderWatch, tmp_path: Path) -> None:
    (tmp_path / "SOUL.md").write_text("soul")
    assert watch.add(str(tmp_path))
    assert watch.changed() == set()
    assert (tmp_path / "SOUL.md").read_text() == "soul"  # reading is no change
    os.listdir(tmp_path)
    assert watch.changed() == set()


def test_a_write_a_new_file_and_an_editors_rename_are_each_reported(
    watch: FolderWatch, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    soul = tmp_path / "SOUL.md"
    soul.write_text("one")
    assert watch.add(str(tmp_path)) and watch.add(str(other))
    soul.write_text("two")
    assert watch.changed() == {str(tmp_path)}
    assert watch.changed() == set()  # told once
    (other / "new.md").write_text("x")
    assert watch.changed() == {str(other)}
    saved = tmp_path / ".SOUL.md.swp"
    saved.write_text("three")
    watch.changed()
    os.rename(saved, soul)  # how many editors save
    assert watch.changed() == {str(tmp_path)}


def test_a_deleted_or_moved_folder_is_reported_and_watched_no_more(
    watch: FolderWatch, tmp_path: Path
) -> None:
    memory, notes = tmp_path / "memory", tmp_path / "notes"
    memory.mkdir()
    notes.mkdir()
    assert watch.add(str(memory)) and watch.add(str(notes))
    memory.rmdir()
    assert str(memory) in (watch.changed() or set())
    notes.rename(tmp_path / "moved")
    assert str(notes) in (watch.changed() or set())
    (tmp_path / "moved" / "late.md").write_text("x")  # its old watch says nothing now
    assert watch.changed() == set()
    memory.mkdir()  # a new folder at the path: watched again by the next add
    assert watch.add(str(memory))
    (memory / "today.md").write_text("x")
    assert watch.changed() == {str(memory)}


def test_a_missing_path_or_a_file_cannot_be_watched(watch: FolderWatch, tmp_path: Path) -> None:
    assert not watch.add(str(tmp_path / "missing"))
    (tmp_path / "file.md").write_text("x")
    assert not watch.add(str(tmp_path / "file.md"))


def test_a_full_kernel_queue_means_anything_may_have_changed(
    watch: FolderWatch, tmp_path: Path
) -> None:
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    if limit > 100_000:
        pytest.skip("the kernel's event queue is too long to fill in a test")
    assert watch.add(str(tmp_path))
    target = tmp_path / "busy.md"
    fd = os.open(target, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        # bounded: a write and a mode change make two events (the kernel merges only
        # an event equal to the one before it)
        for _ in range(limit // 2 + 10):
            os.write(fd, b"x")
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    assert watch.changed() is None
    target.write_text("after")
    assert watch.changed() == {str(tmp_path)}  # it goes on after an overflow


def test_a_closed_watch_adds_nothing_and_reports_nothing(tmp_path: Path) -> None:
    watch = FolderWatch.open()
    if watch is None:
        pytest.skip("no inotify on this system")
    assert watch.add(str(tmp_path))
    watch.close()
    (tmp_path / "x.md").write_text("x")
    assert watch.changed() == set()
    assert not watch.add(str(tmp_path))
    watch.close()  # twice is fine
