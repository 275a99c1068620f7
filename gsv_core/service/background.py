"""Detached background processes, each known by a name ("gateway", "node").

    pid = start("gateway", argv)       # Conflict when it is already running
    running_pid("gateway")             # None when not running; a stale pid file is removed
    stop("gateway", timeout=10)        # SIGTERM, a bounded wait, then SIGKILL
    tail(path, 100), follow(path)      # for `gsv gateway logs [--follow]`

The files of a process, all under `resolve_paths()`:

    run/{name}.pid     its pid
    run/{name}.json    what the starter learned about it (URL, port ...), see write_state()
    logs/{name}.out    its stdout and stderr since the latest start (crash output lands here;
                       the process keeps its own rotating log in logs/{name}.log)
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import IO
from typing import Any

from gsv_core.errors import Conflict
from gsv_core.errors import GsvError
from gsv_core.errors import NotFound
from gsv_core.fsmodes import make_private_dir
from gsv_core.fsmodes import open_private
from gsv_core.fsmodes import write_private_file
from gsv_core.paths import resolve_paths

# how long stop() waits after SIGKILL before giving up on the process
KILL_WAIT = 5.0
_POLL = 0.05
_BLOCK = 8192

# processes this interpreter started: polled (and so reaped) instead of signalled, which
# keeps exited children from lingering as zombies that os.kill(pid, 0) calls alive
_children: dict[int, subprocess.Popen[bytes]] = {}


def pid_file(name: str) -> Path:
    return resolve_paths().pid_file(name)


def state_file(name: str) -> Path:
    return resolve_paths().run_dir / f"{name}.json"


def output_file(name: str) -> Path:
    return resolve_paths().log_dir / f"{name}.out"


# -- starting and stopping ---------------------------------------------------------------


def start(name: str, argv: Sequence[str], *, env: Mapping[str, str] | None = None) -> int:
    """Start `argv` detached from this terminal (own session, no stdin), stdout and stderr
    to `output_file(name)`; write its pid file and return the pid."""
    existing = running_pid(name)
    if existing is not None:
        raise Conflict(f"{name} is already running (pid {existing})")
    console = output_file(name)
    make_private_dir(console.parent)
    pid_path = pid_file(name)
    make_private_dir(pid_path.parent)
    try:
        with os.fdopen(open_private(console, os.O_WRONLY | os.O_TRUNC), "wb") as out:
            proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=None if env is None else dict(env),
            )
    except OSError as exc:
        raise GsvError(f"could not start {name}: {exc}") from exc
    _children[proc.pid] = proc
    _write_atomically(pid_path, f"{proc.pid}\n")
    return proc.pid


def stop(name: str, timeout: float = 10.0) -> int | None:
    """Stop the process `name`: SIGTERM, wait up to `timeout`, then SIGKILL.

    Returns the pid that was stopped, or None when nothing was running. The pid and state
    files are removed either way.
    """
    pid = running_pid(name)
    if pid is not None:
        _send(pid, signal.SIGTERM)
        if not wait_exit(pid, timeout):
            _send(pid, signal.SIGKILL, group=True)
            wait_exit(pid, KILL_WAIT)
    _forget(name)
    return pid


def wait_exit(pid: int, timeout: float) -> bool:
    """Wait (bounded) for `pid` to exit; True when it did."""
    child = _children.get(pid)
    if child is not None:
        try:
            child.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        _children.pop(pid, None)
        return True
    deadline = time.monotonic() + timeout
    while is_running(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL)
    return True


def _send(pid: int, sig: signal.Signals, *, group: bool = False) -> None:
    # start() made the process a session (and group) leader: SIGKILL takes its children too,
    # SIGTERM goes to the process alone so it can shut its children down itself
    with contextlib.suppress(ProcessLookupError):
        if group and os.getpgid(pid) == pid:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)


def _forget(name: str) -> None:
    pid_file(name).unlink(missing_ok=True)
    state_file(name).unlink(missing_ok=True)


# -- finding out whether it runs ---------------------------------------------------------


def read_pid(name: str) -> int | None:
    """The pid in the pid file of `name`, or None (no file, or not a pid)."""
    try:
        pid = int(pid_file(name).read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    return pid if pid > 0 else None


def is_running(pid: int) -> bool:
    """Whether a process with this pid exists (and is not a zombie)."""
    child = _children.get(pid)
    if child is not None:
        if child.poll() is None:
            return True
        del _children[pid]
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # no procfs (macOS) or it just went away
        return False
    # the state letter follows the parenthesised command name, which may contain spaces
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def running_pid(name: str) -> int | None:
    """The pid of `name` if it is running; a stale pid file (and state) is removed."""
    pid = read_pid(name)
    if pid is not None and is_running(pid):
        return pid
    if pid_file(name).exists():
        _forget(name)
    return None


# -- what the starter learned ------------------------------------------------------------


def write_state(name: str, state: Mapping[str, Any]) -> None:
    """Record facts about the running process (its URL, port ...) for later commands."""
    _write_atomically(state_file(name), json.dumps(dict(state), indent=2) + "\n")


def read_state(name: str) -> dict[str, Any] | None:
    try:
        state = json.loads(state_file(name).read_text())
    except (FileNotFoundError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def _write_atomically(path: Path, text: str) -> None:
    write_private_file(path, text.encode())


# -- reading logs ------------------------------------------------------------------------


def tail(path: Path, n: int) -> list[str]:
    """The last `n` lines of a text file (without line ends)."""
    try:
        f = path.open("rb")
    except FileNotFoundError:
        raise NotFound(f"no log file at {path}") from None
    with f:
        return _tail_open(f, n)[0]


def follow(
    path: Path,
    *,
    lines: int = 10,
    poll_interval: float = 0.25,
    should_stop: Callable[[], bool] | None = None,
) -> Iterator[str]:
    """The last `lines` lines of a file, then each line appended to it, like `tail -F`:
    survives rotation and truncation, waits for the file to appear. Ends when
    `should_stop()` is true (checked between reads) or when the caller closes it."""
    stopped = should_stop or (lambda: False)
    f = _open_when_present(path, poll_interval, stopped)
    if f is None:
        return
    try:
        initial, position = _tail_open(f, lines)
        yield from initial
        f.seek(position)
        pending = b""
        while not stopped():
            chunk = f.read(_BLOCK)
            if chunk:
                *complete, pending = (pending + chunk).split(b"\n")
                yield from (_decode(raw) for raw in complete)
                continue
            replacement = _replacement(path, f)
            if replacement is not None:
                if pending:  # the old file's last line had no line end
                    yield _decode(pending)
                f.close()
                f, pending = replacement, b""
                continue
            time.sleep(poll_interval)
    finally:
        f.close()


def _open_when_present(
    path: Path, poll_interval: float, stopped: Callable[[], bool]
) -> IO[bytes] | None:
    while not stopped():
        try:
            return path.open("rb")
        except FileNotFoundError:
            time.sleep(poll_interval)
    return None


def _replacement(path: Path, f: IO[bytes]) -> IO[bytes] | None:
    """A fresh handle when the file was rotated (new inode) or truncated, else None."""
    try:
        current = path.stat()
    except FileNotFoundError:  # mid-rotation: keep the old handle and look again later
        return None
    if current.st_ino != os.fstat(f.fileno()).st_ino:
        return path.open("rb")
    if current.st_size < f.tell():
        f.seek(0)
    return None


def _tail_open(f: IO[bytes], n: int) -> tuple[list[str], int]:
    """The last `n` lines of an open file and the offset of its end."""
    end = f.seek(0, os.SEEK_END)
    if n <= 0:
        return [], end
    start, data = end, b""
    # read backwards until the block holds more than n line ends: then the possibly cut
    # first line is not among the last n
    while start > 0 and data.count(b"\n") <= n:
        step = min(_BLOCK, start)
        start -= step
        f.seek(start)
        data = f.read(step) + data
    if not data:
        return [], end
    parts = data.split(b"\n")
    if data.endswith(b"\n"):
        parts.pop()
    return [_decode(raw) for raw in parts[-n:]], end


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace").removesuffix("\r")
