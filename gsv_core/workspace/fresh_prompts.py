"""The prompt files as last read, kept while nothing in their folders changed.

`Workspace.prompt_files` reads an agent's prompt files in a worker thread (stat calls,
reads: disk I/O stays off the event loop). A read is kept, per agent and set of paths,
and given to the next model calls without the thread hop while the kernel reports no
change in the folders it came from (folder_watch.py): an editor's save, a node's write,
the agent's own, each reaches the very next call.

Ordering, so no change is missed: the thread watches the folders before it looks at the
files, so a change during the read is queued; a read records the generation it began in,
and a change noted later (by this caller or any other) has a later generation, so the
kept read no longer holds even when another caller drained the event. A read is kept at
most `RECHECK` seconds whatever the kernel says: a change it cannot see (another machine
writing to a network file system) shows within that. Without inotify nothing is kept.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from collections.abc import Hashable
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass

from gsv_core.workspace.folder_watch import FolderWatch

RECHECK = 2.0  # seconds a read is kept at most


@dataclass(frozen=True)
class Reading:
    """When a read began: the change generation then, and the clock."""

    generation: int
    started: float


@dataclass(frozen=True)
class _Kept:
    files: Mapping[str, str]
    folders: frozenset[str]
    reading: Reading


class FreshPrompts:
    def __init__(
        self,
        open_watch: Callable[[], FolderWatch | None] = FolderWatch.open,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._open_watch = open_watch
        self._clock = clock
        self._watch: FolderWatch | None = None
        self._opened = False  # opened on first use: a gateway that reads none has none
        self._kept: dict[Hashable, _Kept] = {}
        self._generation = 0
        self._changed_at: dict[str, int] = {}  # folder -> generation of its last change
        self._all_changed_at = 0  # the kernel dropped events: every folder then

    def get(self, key: Hashable) -> Mapping[str, str] | None:
        """The files of `key` as kept, if that read still holds (on the event loop)."""
        self._note_changes()
        kept = self._kept.get(key)
        if kept is None:
            return None
        if self._clock() - kept.reading.started >= RECHECK or not self._holds(kept):
            del self._kept[key]
            return None
        return kept.files

    def begin(self) -> Reading:
        """Before a read's thread hop (on the event loop); the first opens the watch."""
        self.open()
        self._note_changes()
        return Reading(self._generation, self._clock())

    @property
    def watching(self) -> bool:
        """Whether the kernel's watch is open (else no read is kept: `watch` is None)."""
        return self._watch is not None

    def watch(self, folders: Iterable[str]) -> frozenset[str] | None:
        """In the read's thread, before it looks at the files: watch `folders`. None when
        any cannot be watched (or there is no watch): the read is not kept."""
        watch = self._watch
        if watch is None:
            return None
        wanted = frozenset(folders)
        return wanted if all(watch.add(folder) for folder in wanted) else None

    def keep(
        self, key: Hashable, reading: Reading, folders: frozenset[str] | None,
        files: Mapping[str, str],
    ) -> None:  # fmt: skip
        """After the read (on the event loop): keep it if its folders were watched."""
        if folders is None:
            self._kept.pop(key, None)
        else:
            self._kept[key] = _Kept(files, folders, reading)
        self._sweep()

    def open(self) -> None:
        """Open the kernel watch, once (on the event loop, before the first read's hop)."""
        if not self._opened:
            self._opened = True
            self._watch = self._open_watch()

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()
            self._watch = None
        self._kept.clear()

    def _note_changes(self) -> None:
        if self._watch is None:
            return
        changed = self._watch.changed()
        if changed is not None and not changed:
            return
        self._generation += 1
        if changed is None:
            self._all_changed_at = self._generation
        else:
            for folder in changed:
                self._changed_at[folder] = self._generation

    def _sweep(self) -> None:
        """Forget reads past RECHECK (yesterday's notes are never asked for again) and
        changes older than every kept read: both stay bounded over months."""
        now = self._clock()
        self._kept = {k: v for k, v in self._kept.items() if now - v.reading.started < RECHECK}
        oldest = min((v.reading.generation for v in self._kept.values()), default=self._generation)
        self._changed_at = {f: g for f, g in self._changed_at.items() if g > oldest}

    def _holds(self, kept: _Kept) -> bool:
        began = kept.reading.generation
        if self._all_changed_at > began:
            return False
        return all(self._changed_at.get(folder, 0) <= began for folder in kept.folders)
