"""Prompt files kept between model calls while their folders are unchanged
(workspace/fresh_prompts.py, workspace.py `prompt_files`): an edit on disk reaches the
very next call, however it is made, and a turn that finds nothing changed makes no
thread hop for them."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from gsv_core.workspace import fresh_prompts
from gsv_core.workspace.backend import FilesystemBackend
from gsv_core.workspace.backend import Stat
from gsv_core.workspace.folder_watch import FolderWatch
from gsv_core.workspace.fresh_prompts import FreshPrompts
from gsv_core.workspace.workspace import Workspace

TODAY = dt.date(2026, 11, 29)


class ScriptedWatch(FolderWatch):
    """A watch whose changes the test announces (the kernel's part is test_folder_watch)."""

    def __init__(self, refuse: Sequence[str] = ()) -> None:
        self.pending: set[str] | None = set()
        self.refuse = set(refuse)

    def add(self, folder: str) -> bool:
        return folder not in self.refuse

    def changed(self) -> set[str] | None:
        found, self.pending = self.pending, set()
        return found

    def close(self) -> None:
        pass


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def kept(fresh: FreshPrompts, folders: set[str] | None, text: str = "soul") -> None:
    reading = fresh.begin()
    watched = fresh.watch(folders or set()) if folders is not None else None
    fresh.keep("k", reading, watched, {"SOUL.md": text})


def test_a_read_is_kept_until_its_folder_changes() -> None:
    watch = ScriptedWatch()
    fresh = FreshPrompts(lambda: watch, Clock())
    fresh.open()
    kept(fresh, {"/ws/main"})
    assert fresh.get("k") == {"SOUL.md": "soul"}
    watch.pending = {"/ws/other"}
    assert fresh.get("k") == {"SOUL.md": "soul"}  # not its folder
    watch.pending = {"/ws/main"}
    assert fresh.get("k") is None


def test_a_change_another_caller_heard_during_the_read_still_voids_it() -> None:
    watch = ScriptedWatch()
    fresh = FreshPrompts(lambda: watch, Clock())
    fresh.open()
    reading = fresh.begin()  # this caller's read begins, its thread looks at the files
    watched = fresh.watch({"/ws/main"})
    watch.pending = {"/ws/main"}  # meanwhile the file changes...
    assert fresh.get("other") is None  # ...and another caller drains the event
    fresh.keep("k", reading, watched, {"SOUL.md": "maybe old"})
    assert fresh.get("k") is None


def test_a_full_kernel_queue_voids_every_read() -> None:
    watch = ScriptedWatch()
    fresh = FreshPrompts(lambda: watch, Clock())
    fresh.open()
    kept(fresh, {"/ws/main"})
    watch.pending = None
    assert fresh.get("k") is None


def test_a_read_is_kept_recheck_seconds_at_most() -> None:
    clock = Clock()
    fresh = FreshPrompts(ScriptedWatch, clock)
    fresh.open()
    kept(fresh, {"/ws/main"})
    clock.now += fresh_prompts.RECHECK - 0.01
    assert fresh.get("k") is not None
    clock.now += 0.02  # a change the kernel cannot see (a network file system) shows now
    assert fresh.get("k") is None


def test_nothing_is_kept_without_a_watch_or_with_a_folder_it_could_not_watch() -> None:
    fresh = FreshPrompts(lambda: None, Clock())
    fresh.open()
    kept(fresh, {"/ws/main"})
    assert fresh.get("k") is None
    fresh = FreshPrompts(lambda: ScriptedWatch(refuse=["/ws/main/memory"]), Clock())
    fresh.open()
    kept(fresh, {"/ws/main", "/ws/main/memory"})
    assert fresh.get("k") is None


def test_what_is_kept_stays_bounded_over_days() -> None:
    clock = Clock()
    watch = ScriptedWatch()
    fresh = FreshPrompts(lambda: watch, clock)
    fresh.open()
    for day in range(50):  # every day's notes are a new set of paths
        reading = fresh.begin()
        fresh.keep(("main", day), reading, fresh.watch({f"/ws/main/{day}"}), {})
        watch.pending = {f"/ws/main/{day}"}
        clock.now += 60
    assert len(fresh._kept) <= 1 and len(fresh._changed_at) <= 1


# -- through the workspace, on real folders ----------------------------------------------


class CountingBackend(FilesystemBackend):
    """The real backend, counting how often the prompt files are looked at."""

    looked = 0

    def stat_many(self, keys: Sequence[str]) -> dict[str, Stat | None]:
        self.looked += 1
        return super().stat_many(keys)


@pytest.fixture
async def workspace(tmp_path: Path) -> Workspace:
    if FolderWatch.open() is None:
        pytest.skip("no inotify on this system")
    ws = Workspace(CountingBackend(tmp_path / "ws"))
    yield ws
    ws.close()


async def soul(ws: Workspace) -> str | None:
    return (await ws.prompt_files("main", True, TODAY)).get("SOUL.md")


async def test_an_unchanged_agent_s_files_are_not_looked_at_again(workspace: Workspace) -> None:
    backend = workspace.backend
    assert isinstance(backend, CountingBackend)
    first = await soul(workspace)
    assert first is not None and backend.looked == 1
    assert await soul(workspace) == first
    assert await soul(workspace) == first
    assert backend.looked == 1


async def test_every_kind_of_edit_on_disk_reaches_the_very_next_call(
    workspace: Workspace, tmp_path: Path
) -> None:
    root = tmp_path / "ws" / "agents" / "main"
    await soul(workspace)
    (root / "SOUL.md").write_text("# Soul\n\nWritten in place.\n")
    assert await soul(workspace) == "# Soul\n\nWritten in place.\n"
    swap = root / ".SOUL.md.tmp"
    swap.write_text("# Soul\n\nSaved by renaming.\n")
    os.replace(swap, root / "SOUL.md")
    assert await soul(workspace) == "# Soul\n\nSaved by renaming.\n"
    (root / "SOUL.md").unlink()
    assert await soul(workspace) is None
    (root / "memory").mkdir(exist_ok=True)
    (root / "memory" / "2026-11-29.md").write_text("Today: bought milk.\n")
    files = await workspace.prompt_files("main", True, TODAY)
    assert files.get("memory/2026-11-29.md") == "Today: bought milk.\n"
    await workspace.write("main", "SOUL.md", "Through the gateway.")  # its own write too
    assert await soul(workspace) == "Through the gateway."


async def test_a_symlinked_file_s_target_edited_elsewhere_reaches_the_next_call(
    workspace: Workspace, tmp_path: Path
) -> None:
    root = tmp_path / "ws" / "agents" / "main"
    await soul(workspace)
    (root / "notes").mkdir()
    target = root / "notes" / "soul.md"
    target.write_text("From the notes folder.\n")
    (root / "SOUL.md").unlink()
    (root / "SOUL.md").symlink_to(target)
    assert await soul(workspace) == "From the notes folder.\n"
    target.write_text("Edited in the notes folder.\n")
    assert await soul(workspace) == "Edited in the notes folder.\n"


async def test_a_guest_and_the_owner_keep_their_own_reads(workspace: Workspace) -> None:
    owner = await workspace.prompt_files("main", True, TODAY)
    guest = await workspace.prompt_files("main", False, TODAY, guest=True)
    assert "USER.md" in owner.files and "USER.md" not in guest.files
    assert "USER.md" not in (await workspace.prompt_files("main", False, TODAY, True)).files
