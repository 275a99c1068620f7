"""Which folders changed since the last look, as the kernel reports it (Linux inotify).

Every model call injects the agent's prompt files (SOUL.md, AGENTS.md, today's notes),
and a file edited in an editor must reach the very next call. Looking at the files each
time (stat calls: disk I/O, so in a worker thread) costs a thread hop per call, about
6% of a turn's gateway CPU on a virtual machine's cores (bench/turn_ab.py). With inotify
(inotify(7), through libc's documented calls) the kernel queues an event for every change
in a watched folder the moment it happens; reading that queue is one non-blocking read of
a file descriptor, no disk access, so it is done on the event loop before each call, and
the files are looked at only when their folders changed.

`FolderWatch.open()` is None where inotify is missing (not Linux, no libc symbol) or
refused (the user's instance limit): the caller looks every time, as before. A folder
that cannot be watched (the user's watch limit) makes `add` False, likewise.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import struct
import threading
import weakref

log = logging.getLogger(__name__)

# <sys/inotify.h>
IN_MODIFY = 0x002
IN_ATTRIB = 0x004
IN_CLOSE_WRITE = 0x008
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC

# anything that can change what a file in the folder holds, or which file a name is
CHANGES = (
    IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE
    | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR
)  # fmt: skip
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, length of the name that follows
READ_SIZE = 64 * 1024


class FolderWatch:
    """Watches on folders (by real path); `changed()` says which changed since it was
    last asked. `add` may be called from any thread; `changed` from one."""

    def __init__(self, libc: ctypes.CDLL, fd: int) -> None:
        self._libc = libc
        self._fd = fd
        self._lock = threading.Lock()
        self._folders: dict[int, str] = {}  # watch descriptor -> real folder path
        self._refused: set[str] = set()  # folders the watch limit kept out (logged once)
        # the descriptor is closed with the watch, or when it is collected unclosed
        self._closer = weakref.finalize(self, os.close, fd)

    @classmethod
    def open(cls) -> FolderWatch | None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            init = libc.inotify_init1
            libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
            libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        except (OSError, AttributeError):
            return None  # no inotify here
        fd = init(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            log.info("no inotify instance (%s): prompt files are checked on every turn",
                     os.strerror(ctypes.get_errno()))  # fmt: skip
            return None
        return cls(libc, fd)

    def add(self, folder: str) -> bool:
        """Watch `folder` (a real path; watching it again is a no-op). False when it
        cannot be watched: gone, no folder, or the watch limit reached."""
        with self._lock:
            if not self._closer.alive:
                return False
            wd = self._libc.inotify_add_watch(self._fd, os.fsencode(folder), CHANGES)
            if wd < 0:
                code = ctypes.get_errno()
                if code == errno.ENOSPC and folder not in self._refused:
                    self._refused.add(folder)  # said once, not on every model call
                    log.warning("the inotify watch limit is reached: prompt files in %s are "
                                "checked on every turn", folder)  # fmt: skip
                return False
            self._folders[wd] = folder
            return True

    def changed(self) -> set[str] | None:
        """The folders that changed since the last call (removed or moved ones too, whose
        watches are gone now); None when the kernel dropped events (its queue was full):
        any folder may have changed."""
        found: set[str] = set()
        while True:
            try:
                data = os.read(self._fd, READ_SIZE)
            except BlockingIOError:
                return found
            except OSError:  # closed
                return found
            if not data:
                return found
            with self._lock:
                if not self._read_events(data, found):
                    return None

    def _read_events(self, data: bytes, found: set[str]) -> bool:
        offset = 0
        while offset + _EVENT.size <= len(data):
            wd, mask, _, length = _EVENT.unpack_from(data, offset)
            offset += _EVENT.size + length
            if mask & IN_Q_OVERFLOW:
                return False
            folder = self._folders.get(wd)
            if folder is not None:
                found.add(folder)
            if mask & IN_MOVE_SELF:
                # its path is wrong now: the folder at that path (if any) is watched
                # again when its files are next looked at
                self._libc.inotify_rm_watch(self._fd, wd)
            if mask & (IN_IGNORED | IN_MOVE_SELF):  # the watch is gone (a deleted folder)
                self._folders.pop(wd, None)
        return True

    def close(self) -> None:
        with self._lock:
            self._closer()
            self._folders.clear()
