"""Bash: sync, background and yield modes, timeouts that kill whole process groups."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from gsv_core.node.tools import Toolset
from gsv_core.node.tools import build_toolset
from gsv_core.node.tools.processes import login_shell
from tests.node.tools.conftest import alive
from tests.node.tools.conftest import eventually
from tests.node.tools.conftest import failure
from tests.waiting import WAIT


async def test_sync_command_returns_merged_output_and_exit_code(
    toolset: Toolset, workspace: Path
) -> None:
    """A synchronous command returns stdout and stderr merged, exit code 0, status completed."""
    result = await toolset.invoke("Bash", {"command": "echo out; echo err >&2"})
    assert result["status"] == "completed"
    assert result["exitCode"] == 0
    assert result["signal"] is None
    assert result["timedOut"] is False
    assert result["output"] == "out\nerr\n"
    assert result["tail"] == "out\nerr\n"
    assert result["truncated"] is False
    assert result["workdir"] == str(workspace)
    assert result["durationMs"] == result["endedAt"] - result["startedAt"]
    uuid.UUID(result["sessionId"])


async def test_nonzero_exit_is_a_successful_call_with_status_failed(toolset: Toolset) -> None:
    """A failing command is not a tool error: status "failed" with its exit code."""
    result = await toolset.invoke("Bash", {"command": "echo nope; exit 3"})
    assert (result["status"], result["exitCode"], result["output"]) == ("failed", 3, "nope\n")


@pytest.mark.parametrize("command", ["", "   \n"])
async def test_empty_command_is_refused(toolset: Toolset, command: str) -> None:
    """An empty or blank command fails with the original's message."""
    assert await failure(toolset, "Bash", {"command": command}) == "command must not be empty"


async def test_missing_command_is_invalid_arguments(toolset: Toolset) -> None:
    """Without `command` the call fails validation and names the field."""
    message = await failure(toolset, "Bash", {"workdir": "."})
    assert message == "Invalid arguments: 'command' is required"


async def test_negative_timeout_is_invalid_arguments(toolset: Toolset) -> None:
    """A negative timeout is refused with the bound it broke."""
    message = await failure(toolset, "Bash", {"command": "true", "timeout": -1})
    assert message == "Invalid arguments: 'timeout' must be >= 0 (got -1)"


async def test_non_finite_timeout_is_invalid_arguments(toolset: Toolset) -> None:
    """NaN or infinite timeouts are refused rather than crashing the timer."""
    message = await failure(toolset, "Bash", {"command": "true", "timeout": float("inf")})
    assert message == "Invalid arguments: 'timeout': Input should be a finite number"


async def test_relative_workdir_resolves_against_the_workspace(
    toolset: Toolset, workspace: Path
) -> None:
    """`workdir: "sub"` runs the command in <workspace>/sub."""
    (workspace / "sub").mkdir()
    result = await toolset.invoke("Bash", {"command": "pwd -P", "workdir": "sub"})
    assert result["output"].strip() == str((workspace / "sub").resolve())
    assert result["workdir"] == str(workspace / "sub")


async def test_missing_workdir_is_an_error(toolset: Toolset, workspace: Path) -> None:
    """A workdir that does not exist is a clear error, not a spawn failure."""
    message = await failure(toolset, "Bash", {"command": "true", "workdir": "nope"})
    assert message == f"workdir does not exist: '{workspace / 'nope'}'"


async def test_workdir_outside_a_restricted_workspace_is_refused(restricted: Toolset) -> None:
    """With restrict_to_workspace, `workdir: ".."` is refused before anything runs."""
    message = await failure(restricted, "Bash", {"command": "true", "workdir": ".."})
    assert "is outside the node workspace" in message


async def test_sync_command_reads_eof_from_stdin(toolset: Toolset) -> None:
    """A synchronous `cat` ends at once: nothing could ever write to its stdin."""
    result = await toolset.invoke("Bash", {"command": "cat; echo done"})
    assert (result["status"], result["output"]) == ("completed", "done\n")


async def test_timeout_kills_the_whole_process_group(toolset: Toolset, workspace: Path) -> None:
    """On timeout the shell and the child it spawned are both gone (the original killed only the shell)."""
    command = "sleep 300 & echo $! > child.pid; wait"
    result = await toolset.invoke("Bash", {"command": command, "timeout": 1500})
    assert result["status"] == "failed"
    assert result["timedOut"] is True
    assert result["exitCode"] is None
    assert result["signal"] in ("SIGTERM", "SIGKILL")
    child = int((workspace / "child.pid").read_text())
    await eventually(lambda: not alive(child))


async def test_timeout_escalates_to_sigkill_reported_by_name(toolset: Toolset) -> None:
    """A command ignoring SIGTERM is SIGKILLed, and the signal is reported as "SIGKILL"."""
    result = await toolset.invoke("Bash", {"command": "trap '' TERM; sleep 300", "timeout": 300})
    assert (result["timedOut"], result["signal"], result["status"]) == (True, "SIGKILL", "failed")


async def test_plain_timeout_reports_sigterm(toolset: Toolset) -> None:
    """A command that dies of the first SIGTERM reports "SIGTERM"."""
    result = await toolset.invoke("Bash", {"command": "exec sleep 300", "timeout": 300})
    assert (result["timedOut"], result["signal"]) == (True, "SIGTERM")


async def test_output_keeps_the_last_200000_characters(toolset: Toolset) -> None:
    """Long output is cut from the front: the tail survives and `truncated` is set."""
    command = "head -c 250000 /dev/zero | tr '\\0' a; echo END"
    result = await toolset.invoke("Bash", {"command": command})
    assert len(result["output"]) == 200_000
    assert result["output"].endswith("aaaEND\n")
    assert result["truncated"] is True
    assert result["tail"] == result["output"][-4000:]


async def test_command_returns_when_the_shell_exits_even_if_a_child_holds_the_pipe(
    toolset: Toolset,
) -> None:
    """`server &` does not keep the call waiting: the shell's exit ends the command."""
    result = await toolset.invoke("Bash", {"command": "echo up; sleep 300 &"})
    assert (result["status"], result["output"]) == ("completed", "up\n")


async def test_background_returns_a_running_session_and_reports_its_end(
    toolset: Toolset, events: list[dict[str, Any]], workspace: Path
) -> None:
    """`background: true` returns at once; `started` and `failed` exec events follow."""
    result = await toolset.invoke("Bash", {"command": "echo hi; exit 3", "background": True})
    assert result["status"] == "running"
    assert set(result) == {"status", "sessionId", "pid", "startedAt", "tail", "workdir"}
    assert result["workdir"] == str(workspace)
    await eventually(lambda: len(events) == 2)
    started, ended = events
    assert started["event"] == "started"
    assert ended["event"] == "failed"
    assert ended["sessionId"] == started["sessionId"] == result["sessionId"]
    assert (ended["exitCode"], ended["outputTail"]) == (3, "hi\n")
    assert ended["endedAt"] >= ended["startedAt"] == result["startedAt"]
    assert "signal" not in ended
    assert started["eventId"] != ended["eventId"]
    uuid.UUID(ended["eventId"])


async def test_background_success_reports_finished(
    toolset: Toolset, events: list[dict[str, Any]]
) -> None:
    """A background command exiting 0 is reported as `finished` with exit code 0."""
    await toolset.invoke("Bash", {"command": "echo ok", "background": True})
    await eventually(lambda: len(events) == 2)
    assert (events[1]["event"], events[1]["exitCode"], events[1]["outputTail"]) == (
        "finished",
        0,
        "ok\n",
    )


async def test_background_timeout_reports_timed_out(
    toolset: Toolset, events: list[dict[str, Any]]
) -> None:
    """A background command that times out is reported as `timed_out` with its signal."""
    args = {"command": "exec sleep 300", "background": True, "timeout": 200}
    await toolset.invoke("Bash", args)
    await eventually(lambda: len(events) == 2)
    assert (events[1]["event"], events[1]["signal"], events[1]["exitCode"]) == (
        "timed_out",
        "SIGTERM",
        None,
    )


async def test_sync_command_emits_no_exec_events(
    toolset: Toolset, events: list[dict[str, Any]]
) -> None:
    """Only backgrounded sessions are reported; a synchronous command is not."""
    await toolset.invoke("Bash", {"command": "true"})
    assert events == []


async def test_yield_returns_the_result_when_the_command_finishes_in_time(
    toolset: Toolset, events: list[dict[str, Any]]
) -> None:
    """A command finishing inside the yield window returns its completed result."""
    result = await toolset.invoke("Bash", {"command": "echo quick", "yieldMs": 120_000})
    assert (result["status"], result["output"]) == ("completed", "quick\n")
    assert events == []


async def test_yield_backgrounds_a_slow_command_then_poll_sees_it_finish(
    toolset: Toolset, events: list[dict[str, Any]]
) -> None:
    """After yieldMs the command is backgrounded; Process submit/poll then drive it."""
    result = await toolset.invoke("Bash", {"command": "read line; echo got $line", "yieldMs": 10})
    assert result["status"] == "running"
    session = {"sessionId": result["sessionId"]}
    await toolset.invoke("Process", {"action": "submit", "data": "x", **session})

    async def finished() -> dict[str, Any] | None:
        poll = await toolset.invoke("Process", {"action": "poll", **session})
        return None if poll["running"] else poll

    poll = await eventually(finished)
    assert (poll["status"], poll["exitCode"], poll["tail"]) == ("completed", 0, "got x\n")
    assert [event["event"] for event in events] == ["started", "finished"]


async def test_out_of_range_yield_is_clamped_not_refused(toolset: Toolset) -> None:
    """yieldMs below 10 is clamped (not an error): a waiting command is backgrounded."""
    result = await toolset.invoke("Bash", {"command": "read line", "yieldMs": -5})
    assert result["status"] == "running"


async def test_close_kills_background_process_groups(
    workspace: Path, events: list[dict[str, Any]]
) -> None:
    """Toolset.close() kills every background command and the children it spawned."""
    tools = build_toolset(workspace)
    result = await tools.invoke(
        "Bash", {"command": "sleep 300 & echo $! > child.pid; wait", "background": True}
    )
    pid_file = workspace / "child.pid"
    await eventually(lambda: pid_file.exists() and pid_file.read_text().strip())
    child = int(pid_file.read_text())
    await tools.close()
    await eventually(lambda: not alive(child) and not alive(result["pid"]))


async def test_cancelled_call_kills_its_command(toolset: Toolset, workspace: Path) -> None:
    """If the caller gives up on a synchronous call, the command's group is killed."""
    pid_file = workspace / "child.pid"
    call = asyncio.create_task(
        toolset.invoke("Bash", {"command": "sleep 300 & echo $! > child.pid; wait"})
    )
    await eventually(lambda: pid_file.exists() and pid_file.read_text().strip())
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    child = int(pid_file.read_text())
    await eventually(lambda: not alive(child))


def _a_child_runs(marker: str) -> bool:
    """Whether a child process of this one has `marker` in its command line (read now)."""
    me = str(os.getpid())
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = stat.read_text().rpartition(")")[2].split()[1]
            line = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if parent == me and marker.encode() in line:
            return True
    return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
async def test_a_call_cancelled_while_its_shell_starts_kills_what_the_shell_started(
    toolset: Toolset, workspace: Path
) -> None:
    """The cancel comes while the shell runs but its start is not done (the event loop has
    not yet connected its pipes: on a loaded machine the shell can start a child first).
    Held there on purpose: the loop is blocked from the moment the shell exists until the
    call is cancelled. asyncio alone would kill the shell and leave `sleep` running."""
    fifo = workspace / "child.pid"
    os.mkfifo(fifo)
    marker = f"marker-{uuid.uuid4().hex}"
    command = f"sleep 300 & echo $! > child.pid; wait  # {marker}"
    call = asyncio.create_task(toolset.invoke("Bash", {"command": command}))
    async with asyncio.timeout(WAIT):
        while not _a_child_runs(marker):
            await asyncio.sleep(0)  # one turn of the loop at a time: the start is one turn
    with fifo.open() as written:  # blocks (and the loop with it) until the shell wrote
        child = int(written.read())
    call.cancel()
    try:
        with pytest.raises(asyncio.CancelledError):
            await call
        await eventually(lambda: not alive(child), "sleep to be killed with its shell")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)


def test_login_shell_is_an_executable_that_reads_lines_as_bash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """$SHELL is used only when it is an absolute path to an executable of a shell that
    quotes as bash does; otherwise bash (or /bin/sh where there is no bash)."""
    fallback = "/bin/bash" if Path("/bin/bash").exists() else "/bin/sh"
    monkeypatch.setenv("SHELL", "bash")
    assert login_shell() == fallback
    monkeypatch.setenv("SHELL", "/nonexistent/shell")
    assert login_shell() == fallback
    monkeypatch.setenv("SHELL", "/bin/sh")
    assert login_shell() == "/bin/sh"
    monkeypatch.delenv("SHELL")
    assert login_shell() == fallback
    for other in ("/usr/bin/fish", "/bin/tcsh", "/usr/bin/nu"):
        if Path(other).exists():
            monkeypatch.setenv("SHELL", other)
            assert login_shell() == fallback


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
async def test_a_fish_users_node_runs_lines_as_the_reader_judged_them(
    toolset: Toolset, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """For real: fish reads `\\'` in single quotes as a quote, so this line, one echo to
    bash and to the approval reader, runs `touch` under fish. A node whose $SHELL is fish
    runs it with bash: nothing is touched."""
    line = "echo 'a\\'' ; touch ran ; echo ' #'"
    fish = shutil.which("fish")
    assert fish is not None
    subprocess.run([fish, "--no-config", "-c", line], cwd=workspace, timeout=30)
    assert (workspace / "ran").exists()  # the danger is real
    (workspace / "ran").unlink()
    monkeypatch.setenv("SHELL", fish)
    result = await toolset.invoke("Bash", {"command": line})
    assert result["status"] == "completed" and "a\\ ; touch ran ; echo" in result["output"]
    assert not (workspace / "ran").exists()
