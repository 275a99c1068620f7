"""Background processes (real child processes: start, status, stop, stale pid files) and
reading log files (tail, follow through appends, truncation and rotation)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gsv_core.errors import Conflict
from gsv_core.errors import GsvError
from gsv_core.errors import NotFound
from gsv_core.service import background

# prints a line once its SIGTERM disposition is set, then waits to be stopped
SERVER = """
import signal, sys, time
if sys.argv[1:] == ["stubborn"]:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True)
print("on stderr", file=sys.stderr, flush=True)
while True:
    time.sleep(60)
"""


def _argv(*extra: str) -> list[str]:
    return [sys.executable, "-c", SERVER, *extra]


def _wait_for_output(name: str, text: str, timeout: float = 30.0) -> str:
    """Bounded wait until the process wrote `text` to its output file."""
    deadline = time.monotonic() + timeout
    path = background.output_file(name)
    while time.monotonic() < deadline:
        content = path.read_text() if path.exists() else ""
        if text in content:
            return content
        time.sleep(0.02)
    raise AssertionError(f"{text!r} never appeared in {path}")


@pytest.fixture
def cleanup() -> Iterator[None]:
    """Whatever a test starts is stopped afterwards, even when it fails."""
    yield
    for name in ("svc", "other"):
        background.stop(name, timeout=5)


def _dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# -- start / stop ------------------------------------------------------------------------


def test_start_writes_the_pid_file_and_captures_output(cleanup: None) -> None:
    """start() returns the pid, writes it to run/NAME.pid, and sends stdout and stderr to
    logs/NAME.out."""
    pid = background.start("svc", _argv())
    assert background.pid_file("svc").read_text().strip() == str(pid)
    content = _wait_for_output("svc", "on stderr")
    assert "ready" in content
    assert background.is_running(pid)
    assert background.running_pid("svc") == pid


def test_the_process_runs_in_its_own_session(cleanup: None) -> None:
    """The child is a session leader, so a terminal's Ctrl-C or hang-up does not reach it."""
    pid = background.start("svc", _argv())
    assert os.getsid(pid) == pid


def test_stop_terminates_the_process_and_removes_its_files(cleanup: None) -> None:
    """stop() returns the pid it stopped; afterwards the pid and state files are gone."""
    pid = background.start("svc", _argv())
    background.write_state("svc", {"url": "ws://127.0.0.1:1/ws"})
    assert background.stop("svc", timeout=30) == pid
    assert not background.is_running(pid)
    assert not background.pid_file("svc").exists()
    assert background.read_state("svc") is None


def test_stop_kills_a_process_that_ignores_sigterm(cleanup: None) -> None:
    """After the timeout, a process that ignores SIGTERM gets SIGKILL."""
    pid = background.start("svc", _argv("stubborn"))
    _wait_for_output("svc", "ready")
    assert background.stop("svc", timeout=0.2) == pid
    assert not background.is_running(pid)


def test_stop_when_nothing_runs_returns_none() -> None:
    """Stopping a process that was never started is not an error."""
    assert background.stop("svc") is None


def test_starting_twice_is_a_conflict(cleanup: None) -> None:
    """A second start while the first process runs raises Conflict naming the pid."""
    pid = background.start("svc", _argv())
    with pytest.raises(Conflict, match=f"already running \\(pid {pid}\\)"):
        background.start("svc", _argv())
    assert background.read_pid("svc") == pid


def test_processes_with_different_names_are_independent(cleanup: None) -> None:
    """Each name has its own pid file: two can run at once."""
    first = background.start("svc", _argv())
    second = background.start("other", _argv())
    assert first != second
    assert background.stop("other", timeout=30) == second
    assert background.running_pid("svc") == first


def test_a_missing_program_is_a_gsv_error() -> None:
    """A program that does not exist raises GsvError and leaves no pid file."""
    with pytest.raises(GsvError, match="could not start svc"):
        background.start("svc", ["/nonexistent/program"])
    assert not background.pid_file("svc").exists()


# -- stale and foreign pids --------------------------------------------------------------


def test_a_stale_pid_file_is_removed_and_start_works_again(cleanup: None) -> None:
    """A pid file naming a dead process counts as not running and is cleaned up."""
    path = background.pid_file("svc")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{_dead_pid()}\n")
    background.write_state("svc", {"url": "ws://old"})
    assert background.running_pid("svc") is None
    assert not path.exists()
    assert background.read_state("svc") is None
    pid = background.start("svc", _argv())
    assert background.running_pid("svc") == pid


@pytest.mark.parametrize("content", ["", "not a pid\n", "-5\n", "0\n"])
def test_a_garbage_pid_file_reads_as_no_pid(content: str) -> None:
    """A pid file without a positive number is no pid, and running_pid() removes it."""
    path = background.pid_file("svc")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    assert background.read_pid("svc") is None
    assert background.running_pid("svc") is None
    assert not path.exists()


def test_is_running_sees_processes_started_elsewhere() -> None:
    """A process this module did not start is found with a signal-0 probe."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert background.is_running(proc.pid)
    finally:
        proc.kill()
        proc.wait()
    assert not background.is_running(proc.pid)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs procfs")
def test_an_unreaped_zombie_is_not_running() -> None:
    """A process that exited but whose parent has not reaped it yet counts as not running."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # wait for exit, do not reap
    try:
        assert not background.is_running(proc.pid)
    finally:
        proc.wait()


def test_stop_works_on_a_process_started_by_another_command(cleanup: None) -> None:
    """`gsv gateway stop` runs in a new process: it stops a pid it only knows from the file."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    path = background.pid_file("svc")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{proc.pid}\n")
    try:
        assert background.stop("svc", timeout=30) == proc.pid
        assert proc.wait(timeout=30) == -signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# -- state -------------------------------------------------------------------------------


def test_state_round_trips_and_bad_state_reads_as_none() -> None:
    """write_state() is read back by read_state(); a corrupt file reads as None."""
    background.write_state("svc", {"url": "ws://127.0.0.1:9/ws", "pid": 3})
    assert background.read_state("svc") == {"url": "ws://127.0.0.1:9/ws", "pid": 3}
    background.state_file("svc").write_text("{not json")
    assert background.read_state("svc") is None
    background.state_file("svc").write_text("[1, 2]")
    assert background.read_state("svc") is None


# -- tail --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "n", "expected"),
    [
        (b"a\nb\nc\n", 2, ["b", "c"]),
        (b"a\nb\nc\n", 10, ["a", "b", "c"]),
        (b"a\nb\nc", 2, ["b", "c"]),
        (b"a\r\nb\r\n", 5, ["a", "b"]),
        (b"\n\n", 5, ["", ""]),
        (b"", 5, []),
        (b"a\nb\n", 0, []),
        (b"caf\xc3\xa9 \xff\n", 1, ["café \ufffd"]),
    ],
)
def test_tail_returns_the_last_lines(
    tmp_path: Path, content: bytes, n: int, expected: list[str]
) -> None:
    """tail() gives the last n lines without line ends, decoding invalid UTF-8 safely."""
    path = tmp_path / "x.log"
    path.write_bytes(content)
    assert background.tail(path, n) == expected


def test_tail_reads_only_the_end_of_a_long_file(tmp_path: Path) -> None:
    """Lines spanning many read blocks come back whole and in order."""
    path = tmp_path / "big.log"
    path.write_text("".join(f"line {i} " + "x" * (i % 50) + "\n" for i in range(20_000)))
    expected = [f"line {i} " + "x" * (i % 50) for i in range(19_000, 20_000)]
    assert background.tail(path, 1000) == expected


def test_tail_of_a_missing_file_is_not_found(tmp_path: Path) -> None:
    """A missing log is NotFound naming the path."""
    with pytest.raises(NotFound, match="no log file"):
        background.tail(tmp_path / "nope.log", 10)


# -- follow ------------------------------------------------------------------------------


def test_follow_yields_the_tail_then_appended_lines(tmp_path: Path) -> None:
    """follow() starts with the last lines, then yields each line appended later."""
    path = tmp_path / "x.log"
    path.write_text("one\ntwo\nthree\n")
    lines = background.follow(path, lines=2, poll_interval=0.01)
    assert [next(lines), next(lines)] == ["two", "three"]
    with path.open("a") as f:
        f.write("four\nfi")
        f.flush()
        assert next(lines) == "four"
        f.write("ve\n")
    assert next(lines) == "five"
    lines.close()


def test_follow_starts_over_after_truncation(tmp_path: Path) -> None:
    """When the file shrinks (truncated), reading restarts at its beginning."""
    path = tmp_path / "x.log"
    path.write_text("a long first line\n")
    lines = background.follow(path, lines=5, poll_interval=0.01)
    assert next(lines) == "a long first line"
    path.write_text("new\n")
    assert next(lines) == "new"
    lines.close()


def test_follow_moves_to_the_new_file_after_rotation(tmp_path: Path) -> None:
    """After a rotation (rename, new file) it drains the old file and then reads the new."""
    path = tmp_path / "x.log"
    path.write_text("before\n")
    lines = background.follow(path, lines=5, poll_interval=0.01)
    assert next(lines) == "before"
    with path.open("a") as f:
        f.write("last of old\n")
    path.rename(tmp_path / "x.log.1")
    path.write_text("first of new\n")
    assert [next(lines), next(lines)] == ["last of old", "first of new"]
    lines.close()


def test_follow_waits_for_the_file_to_appear(tmp_path: Path) -> None:
    """A file that does not exist yet is waited for; checks of should_stop() go on meanwhile."""
    path = tmp_path / "later.log"
    checks: list[bool] = []

    def should_stop() -> bool:
        checks.append(True)
        if len(checks) == 3:  # the writer shows up while follow() is waiting
            path.write_text("hello\n")
        return False

    lines = background.follow(path, poll_interval=0.01, should_stop=should_stop)
    assert next(lines) == "hello"
    assert len(checks) >= 3
    lines.close()


def test_follow_ends_when_asked_to_stop(tmp_path: Path) -> None:
    """should_stop() returning true ends the generator after the initial lines."""
    path = tmp_path / "x.log"
    path.write_text("only\n")
    assert list(background.follow(path, should_stop=lambda: True)) == []
    calls = iter([False, True])
    assert list(background.follow(path, should_stop=lambda: next(calls))) == ["only"]
