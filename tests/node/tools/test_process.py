"""Process: list, poll, log, write, submit and kill background Bash sessions."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from gsv_core.errors import ToolFailed
from gsv_core.node.tools import Toolset
from gsv_core.node.tools.process import ProcessTool
from gsv_core.node.tools.processes import ProcessManager
from tests.node.tools.conftest import FakeClock
from tests.node.tools.conftest import alive
from tests.node.tools.conftest import eventually
from tests.node.tools.conftest import failure

THIRTY_MINUTES = 30 * 60 * 1000


async def background(tools: Toolset, command: str) -> str:
    result = await tools.invoke("Bash", {"command": command, "background": True})
    assert result["status"] == "running"
    return str(result["sessionId"])


async def poll(tools: Toolset, session_id: str) -> dict[str, Any]:
    result: dict[str, Any] = await tools.invoke(
        "Process", {"action": "poll", "sessionId": session_id}
    )
    return result


async def until_ended(tools: Toolset, session_id: str) -> dict[str, Any]:
    async def ended() -> dict[str, Any] | None:
        result = await poll(tools, session_id)
        return None if result["running"] else result

    result: dict[str, Any] = await eventually(ended)
    return result


async def test_list_without_sessions_says_so(toolset: Toolset) -> None:
    """`list` with nothing in the background returns the original's empty text."""
    result = await toolset.invoke("Process", {"action": "list"})
    assert result == {
        "status": "completed",
        "sessions": [],
        "text": "No running or recent sessions.",
    }


async def test_list_shows_background_sessions_newest_first(
    clocked: Toolset, clock: FakeClock
) -> None:
    """Sessions are listed newest first, with one "{id} {status:9} {ms}ms :: {cmd}" line each."""
    older = await background(clocked, "sleep 300")
    clock.advance(1000)
    newer = await background(clocked, "sleep  300\n# second")
    clock.advance(500)
    result = await clocked.invoke("Process", {"action": "list"})
    assert [s["sessionId"] for s in result["sessions"]] == [newer, older]
    assert result["text"].splitlines() == [
        f"{newer} running   500ms :: sleep 300 # second",
        f"{older} running   1500ms :: sleep 300",
    ]
    first = result["sessions"][0]
    assert first["command"] == "sleep  300\n# second"
    assert (first["status"], first["runtimeMs"], first["endedAt"], first["exitCode"]) == (
        "running",
        500,
        None,
        None,
    )
    assert set(first) == {
        "sessionId", "status", "pid", "startedAt", "endedAt", "runtimeMs", "workdir",
        "command", "tail", "truncated", "exitCode", "signal", "timedOut",
    }  # fmt: skip


async def test_action_is_trimmed_and_lowercased(toolset: Toolset) -> None:
    """ " LIST " is the list action."""
    result = await toolset.invoke("Process", {"action": " LIST "})
    assert result["status"] == "completed"


async def test_unknown_action_is_an_error_naming_it(toolset: Toolset) -> None:
    """An action outside list/poll/log/write/submit/kill is refused by name."""
    assert await failure(toolset, "Process", {"action": "frob"}) == "Unknown action frob"


@pytest.mark.parametrize("action", ["poll", "log", "write", "submit", "kill"])
async def test_actions_other_than_list_need_a_session_id(toolset: Toolset, action: str) -> None:
    """Every action but list fails without sessionId."""
    message = await failure(toolset, "Process", {"action": action})
    assert message == "sessionId is required for this action"


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ("poll", "No session found for nope"),
        ("log", "No session found for nope"),
        ("write", "No active session found for nope"),
        ("submit", "No active session found for nope"),
        ("kill", "No active session found for nope"),
    ],
)
async def test_unknown_session_is_an_error(toolset: Toolset, action: str, message: str) -> None:
    """An unknown sessionId gets the original's failure message for each action."""
    assert await failure(toolset, "Process", {"action": action, "sessionId": "nope"}) == message


async def test_a_session_that_was_not_backgrounded_is_refused(workspace: Path) -> None:
    """Process only drives backgrounded sessions, not a synchronous call in flight."""
    processes = ProcessManager()
    tool = ProcessTool(processes)
    session = await processes.spawn(
        "read line", workdir=str(workspace), timeout_ms=0, keep_stdin=True, confined=False
    )
    try:
        with pytest.raises(ToolFailed, match=f"^Session {session.session_id} is not backgrounded$"):
            await tool.run(tool.parse({"action": "poll", "sessionId": session.session_id}))
    finally:
        await processes.close()


async def test_write_and_submit_reach_the_stdin_of_a_running_cat(toolset: Toolset) -> None:
    """write sends raw data, submit adds a newline; cat echoes both back."""
    session_id = await background(toolset, "cat")
    written = await toolset.invoke(
        "Process", {"action": "write", "sessionId": session_id, "data": "abc"}
    )
    assert written == {"status": "running", "sessionId": session_id, "bytesWritten": 3}
    submitted = await toolset.invoke(
        "Process", {"action": "submit", "sessionId": session_id, "data": "dé"}
    )
    assert submitted["bytesWritten"] == 4  # "dé\n" in UTF-8
    await eventually(lambda: _tail_is(toolset, session_id, "abcdé\n"))


async def _tail_is(tools: Toolset, session_id: str, expected: str) -> bool:
    return (await poll(tools, session_id))["tail"] == expected


async def test_write_to_an_exited_session_is_refused(toolset: Toolset) -> None:
    """write, submit and kill fail once the session has exited."""
    session_id = await background(toolset, "true")
    await until_ended(toolset, session_id)
    for action in ("write", "submit", "kill"):
        message = await failure(toolset, "Process", {"action": action, "sessionId": session_id})
        assert message == f"Session {session_id} has already exited"


async def test_write_to_a_closed_stdin_is_refused(toolset: Toolset) -> None:
    """A process that closed its stdin cannot be written to."""
    session_id = await background(toolset, "exec 0<&-; echo closed; exec sleep 300")
    await eventually(lambda: _tail_is(toolset, session_id, "closed\n"))
    args = {"action": "write", "sessionId": session_id, "data": "x"}
    message = await failure(toolset, "Process", args)
    assert message == f"Session {session_id} stdin is not writable"


async def test_kill_sends_sigkill_to_the_whole_group(toolset: Toolset, workspace: Path) -> None:
    """kill ends the session and its children; poll then reports SIGKILL."""
    session_id = await background(toolset, "sleep 300 & echo $! > child.pid; wait")
    pid_file = workspace / "child.pid"
    await eventually(lambda: pid_file.exists() and pid_file.read_text().strip())
    result = await toolset.invoke("Process", {"action": "kill", "sessionId": session_id})
    assert result == {"status": "running", "sessionId": session_id, "message": "Kill signal sent"}
    ended = await until_ended(toolset, session_id)
    assert (ended["status"], ended["signal"], ended["exitCode"]) == ("failed", "SIGKILL", None)
    await eventually(lambda: not alive(int(pid_file.read_text())))


async def test_poll_reports_exit_code_and_tail(toolset: Toolset) -> None:
    """poll returns the seed's fields once the session has ended."""
    session_id = await background(toolset, "echo bye; exit 4")
    result = await until_ended(toolset, session_id)
    assert result == {
        "status": "failed",
        "sessionId": session_id,
        "exitCode": 4,
        "signal": None,
        "timedOut": False,
        "tail": "bye\n",
        "running": False,
    }


async def test_log_pages_through_output_lines(toolset: Toolset) -> None:
    """log returns lines [offset, offset+limit) with totals and the exit."""
    session_id = await background(toolset, "printf 'a\\nb\\nc\\nd\\n'")
    await until_ended(toolset, session_id)
    args = {"action": "log", "sessionId": session_id, "offset": 1, "limit": 2}
    result = await toolset.invoke("Process", args)
    assert result == {
        "status": "completed",
        "sessionId": session_id,
        "log": "b\nc",
        "totalLines": 4,
        "totalChars": 8,
        "truncated": False,
        "exitCode": 0,
        "signal": None,
    }


async def test_log_of_a_silent_session_says_so(toolset: Toolset) -> None:
    """Empty output reads "(no output yet)" while running, "(no output recorded)" after."""
    running = await background(toolset, "read line")
    result = await toolset.invoke("Process", {"action": "log", "sessionId": running})
    assert (result["log"], result["totalLines"]) == ("(no output yet)", 0)
    assert "exitCode" not in result
    done = await background(toolset, "true")
    await until_ended(toolset, done)
    result = await toolset.invoke("Process", {"action": "log", "sessionId": done})
    assert result["log"] == "(no output recorded)"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("offset", -1, "Invalid arguments: 'offset' must be >= 0 (got -1)"),
        ("limit", 0, "Invalid arguments: 'limit' must be >= 1 (got 0)"),
    ],
)
async def test_log_rejects_bad_paging(
    toolset: Toolset, field: str, value: int, message: str
) -> None:
    """A negative offset or a limit below 1 is invalid."""
    args = {"action": "log", "sessionId": "x", field: value}
    assert await failure(toolset, "Process", args) == message


async def test_finished_sessions_are_kept_for_30_minutes(
    clocked: Toolset, clock: FakeClock
) -> None:
    """A finished session stays listed for 30 minutes, then is forgotten."""
    session_id = await background(clocked, "echo done")
    await until_ended(clocked, session_id)
    clock.advance(THIRTY_MINUTES)
    listed = await clocked.invoke("Process", {"action": "list"})
    assert [s["sessionId"] for s in listed["sessions"]] == [session_id]
    assert re.fullmatch(rf"{session_id} completed \d+ms :: echo done", listed["text"])
    clock.advance(1)
    listed = await clocked.invoke("Process", {"action": "list"})
    assert listed["sessions"] == []
    message = await failure(clocked, "Process", {"action": "poll", "sessionId": session_id})
    assert message == f"No session found for {session_id}"


async def test_close_leaves_no_child_unreaped_nor_a_pipe_open(workspace: Path) -> None:
    """close() kills every shell and returns only once the loop has heard of each exit:
    its transports are closed and every return code known. CI once closed the loop first
    on a loaded machine (a 2 s wait for the supervisors ran out), and the unreaped `sleep`
    surfaced as an unclosed-transport warning in the next test."""
    processes = ProcessManager()
    sessions = [
        await processes.spawn(
            f"sleep 30 & sleep 3{n}; wait",
            workdir=str(workspace),
            timeout_ms=0,
            keep_stdin=n % 2 == 0,
            confined=False,
        )
        for n in range(8)
    ]
    await processes.close()
    for session in sessions:
        assert session.transport.get_returncode() is not None, session.command
        assert session.transport.is_closing(), session.command
        assert not alive(session.pid)
