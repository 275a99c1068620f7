"""The Process tool: list, poll, read logs of, write to and kill background Bash sessions.

Actions and result shapes: docs/tools.md. Failures (no such session, not
backgrounded, already exited, stdin closed, unknown action) raise ToolFailed with the
original's exact messages rather than returning `{status: "failed", error}`, so every
tool error reaches the caller the same way.
"""

from __future__ import annotations

import asyncio
import signal
from typing import Any

from pydantic import Field

from gsv_core.errors import ToolFailed
from gsv_core.node.tools.base import Tool
from gsv_core.node.tools.base import ToolParams
from gsv_core.node.tools.processes import ProcessManager
from gsv_core.node.tools.processes import ProcessSession

ACTIONS = ("list", "poll", "log", "write", "submit", "kill")
STDIN_WRITE_SECONDS = 5.0
LIST_COMMAND_CHARS = 120


class ProcessParams(ToolParams):
    action: str = Field(description="list, poll, log, write, submit or kill.")
    sessionId: str | None = Field(None, description="From Bash; for all but list.")
    data: str = Field("", description="For write and submit.")
    offset: int = Field(0, ge=0, description="log: first line (0-based).")
    limit: int = Field(200, ge=1, description="log: most lines.")


class ProcessTool(Tool[ProcessParams]):
    name = "Process"
    capability = "shell.exec"
    description = (
        "Manage background Bash sessions: list (running, or ended in the last 30 "
        "minutes), poll (status, exit code, tail), log (lines by offset/limit), write (raw "
        "stdin), submit (stdin plus newline), kill (SIGKILL)."
    )
    Params = ProcessParams

    def __init__(self, processes: ProcessManager) -> None:
        self.processes = processes

    async def run(self, params: ProcessParams) -> dict[str, Any]:
        action = params.action.strip().lower()
        if action not in ACTIONS:
            raise ToolFailed(f"Unknown action {params.action.strip()}")
        if action == "list":
            return self._list()
        if not params.sessionId:
            raise ToolFailed("sessionId is required for this action")
        if action in ("poll", "log"):
            session = self._backgrounded(params.sessionId, "No session found for {id}")
            return _poll(session) if action == "poll" else _log(session, params)
        session = self._backgrounded(params.sessionId, "No active session found for {id}")
        if not session.running:
            raise ToolFailed(f"Session {session.session_id} has already exited")
        if action == "kill":
            session.signal_group(signal.SIGKILL)
            return {
                "status": "running",
                "sessionId": session.session_id,
                "message": "Kill signal sent",
            }
        data = params.data + "\n" if action == "submit" else params.data
        return await _write(session, data)

    def _backgrounded(self, session_id: str, missing: str) -> ProcessSession:
        session = self.processes.find(session_id)
        if session is None:
            raise ToolFailed(missing.format(id=session_id))
        if not session.backgrounded:
            raise ToolFailed(f"Session {session_id} is not backgrounded")
        return session

    def _list(self) -> dict[str, Any]:
        now = self.processes.now()
        sessions = [_summary(s, now) for s in self.processes.listed()]
        lines = [
            f"{s['sessionId']} {s['status']:<9} {s['runtimeMs']}ms :: {_one_line(s['command'])}"
            for s in sessions
        ]
        text = "\n".join(lines) if lines else "No running or recent sessions."
        return {"status": "completed", "sessions": sessions, "text": text}


def _summary(session: ProcessSession, now: int) -> dict[str, Any]:
    return {
        "sessionId": session.session_id,
        "status": session.status,
        "pid": session.pid,
        "startedAt": session.started_at,
        "endedAt": session.ended_at,
        "runtimeMs": session.runtime_ms(now),
        "workdir": session.workdir,
        "command": session.command,
        "tail": session.output.tail(),
        "truncated": session.output.truncated,
        "exitCode": session.exit_code,
        "signal": session.signal,
        "timedOut": session.timed_out,
    }


def _one_line(command: str) -> str:
    """The command on one line, so `text` keeps one line per session."""
    flat = " ".join(command.split())
    return flat if len(flat) <= LIST_COMMAND_CHARS else flat[: LIST_COMMAND_CHARS - 1] + "…"


def _poll(session: ProcessSession) -> dict[str, Any]:
    return {
        "status": session.status,
        "sessionId": session.session_id,
        "exitCode": session.exit_code,
        "signal": session.signal,
        "timedOut": session.timed_out,
        "tail": session.output.tail(),
        "running": session.running,
    }


def _log(session: ProcessSession, params: ProcessParams) -> dict[str, Any]:
    text = session.output.text()
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # a trailing newline ends the last line; it does not start a new one
    window = lines[params.offset : params.offset + params.limit]
    empty = "(no output yet)" if session.running else "(no output recorded)"
    result: dict[str, Any] = {
        "status": session.status,
        "sessionId": session.session_id,
        "log": "\n".join(window) if lines else empty,
        "totalLines": len(lines),
        "totalChars": len(text),
        "truncated": session.output.truncated,
    }
    if not session.running:
        result["exitCode"] = session.exit_code
        result["signal"] = session.signal
    return result


async def _write(session: ProcessSession, data: str) -> dict[str, Any]:
    stdin = session.process.stdin
    if stdin is None or stdin.is_closing():
        raise ToolFailed(f"Session {session.session_id} stdin is not writable")
    encoded = data.encode()
    try:
        stdin.write(encoded)
        async with asyncio.timeout(STDIN_WRITE_SECONDS):
            await stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        raise ToolFailed(f"Session {session.session_id} stdin is not writable") from None
    except TimeoutError:
        raise ToolFailed(
            f"Session {session.session_id} is not reading its stdin "
            f"({len(encoded)} bytes still queued)"
        ) from None
    return {"status": "running", "sessionId": session.session_id, "bytesWritten": len(encoded)}
