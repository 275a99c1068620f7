"""Processes started by Bash, and the manager that keeps them for the Process tool.

Every command runs as `$SHELL -lc <command>` (bash instead when $SHELL is not a shell
that reads lines as bash does, e.g. fish: `login_shell`; with git's repository-planted code
turned off and without gsv's credentials or the provider keys, `shell_environment`),
inside the node's sandbox unless the owner granted the call full access
(gsv_core/node/sandbox), in its own session (`start_new_session`), so
its process group id is its pid and a timeout or a kill reaches every child it spawned
(the original signalled only the shell, and children survived). A supervisor
task per process captures output, enforces the timeout (SIGTERM to the group, SIGKILL to
the group 250 ms later) and records the exit. A process is *finished* when the shell
exits; output still arriving from children that keep the pipe open is drained for a short
grace period and then keeps being captured in the background.

Backgrounded sessions (Bash `background` / `yieldMs`) stay in the manager while running
and for 30 minutes after they end; their start and end are reported through the
`on_exec_event` callback as `node.exec.event` params (docs/protocol.md#events).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import uuid
from collections.abc import Callable
from collections.abc import Coroutine
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from signal import SIGKILL
from signal import SIGTERM
from signal import Signals
from typing import Any

from gsv_core.node.sandbox.base import Sandbox
from gsv_core.node.sandbox.environment import without_credentials
from gsv_core.node.sandbox.none import NoSandbox
from gsv_core.node.tools.output import OutputBuffer

log = logging.getLogger(__name__)

ExecEventSink = Callable[[dict[str, Any]], None]
Clock = Callable[[], int]

KILL_GRACE_SECONDS = 0.25
EXIT_DRAIN_SECONDS = 0.2
CLOSE_WAIT_SECONDS = 2.0
# how long close() waits for the loop to hear of a killed shell's exit
EXIT_REPORT_SECONDS = 30.0
RETENTION_MS = 30 * 60 * 1000
MAX_FINISHED = 100
READ_CHUNK = 65_536


def epoch_ms() -> int:
    return int(time.time() * 1000)


# shells that read a command line as bash does, as far as the approval reader judges it
# (gsv_core/approval/shell.py). fish, csh, nushell and the like quote otherwise: fish
# reads `\'` inside single quotes as a quote, so in `echo 'a\'' ; rm x ; echo ' #'` bash
# sees one echo and fish runs `rm x`. A line the reader judged must run as it judged it.
READ_ALIKE_SHELLS = frozenset({"bash", "zsh", "sh", "dash", "ksh", "mksh", "ash"})


def login_shell() -> str:
    """`$SHELL` when it is an absolute path to an executable of a shell that reads lines
    as bash does (READ_ALIKE_SHELLS); else bash, else /bin/sh."""
    shell = os.environ.get("SHELL", "")
    if _executable(shell) and os.path.basename(shell) in READ_ALIKE_SHELLS:
        return shell
    return next((s for s in ("/bin/bash", "/usr/bin/bash") if _executable(s)), "/bin/sh")


def _executable(path: str) -> bool:
    return os.path.isabs(path) and os.path.isfile(path) and os.access(path, os.X_OK)


# Git settings that would run a repository's own code, turned off for every command the
# node runs through git's command-scope config (`GIT_CONFIG_COUNT`/`_KEY_n`/`_VALUE_n`,
# git >= 2.31; older gits ignore it), which outranks the repository's config:
# `core.fsmonitor` is a command `git status` runs, so a repository unpacked or planted in
# the workspace with one would run it at the next allowlisted `git status`. Turning it
# off changes no output, only how fast a huge repository's status is.
# Not `safe.bareRepository=explicit`, though it would stop git from using a repository
# laid out by hand: it breaks tools the owner approves that work in bare repositories by
# changing into them (Bundler's git sources, SwiftPM, Go's module cache in older Go).
# Writing such a repository asks instead (`HEAD` files, see approval/policy.py).
NEUTRAL_GIT_CONFIG = (("core.fsmonitor", "false"),)


def shell_environment(base: Mapping[str, str]) -> dict[str, str]:
    """`base` without credentials (sandbox/environment.py), with NEUTRAL_GIT_CONFIG
    appended to any command-scope config in it."""
    env = without_credentials(base)
    count = env.get("GIT_CONFIG_COUNT", "0")
    index = int(count) if count.isdigit() else 0
    for key, value in NEUTRAL_GIT_CONFIG:
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
        index += 1
    env["GIT_CONFIG_COUNT"] = str(index)
    return env


def signal_name(returncode: int | None) -> str | None:
    """The signal name ("SIGKILL") for a return code of a process killed by a signal."""
    if returncode is None or returncode >= 0:
        return None
    try:
        return Signals(-returncode).name
    except ValueError:
        return f"SIG{-returncode}"


@dataclass(eq=False)
class ProcessSession:
    """One shell command: its process, captured output and, once ended, how it ended."""

    session_id: str
    command: str
    workdir: str
    process: asyncio.subprocess.Process
    transport: asyncio.SubprocessTransport
    exited: asyncio.Event
    started_at: int
    output: OutputBuffer = field(default_factory=OutputBuffer)
    backgrounded: bool = False
    timed_out: bool = False
    ended_at: int | None = None
    exit_code: int | None = None
    signal: str | None = None
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    confined: bool = False  # it runs inside the node's sandbox

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def running(self) -> bool:
        return not self.finished.is_set()

    @property
    def status(self) -> str:
        """running | completed (exit 0) | failed (non-zero exit, signal or timeout)."""
        if self.running:
            return "running"
        ok = self.exit_code == 0 and self.signal is None and not self.timed_out
        return "completed" if ok else "failed"

    def runtime_ms(self, now: int) -> int:
        return (self.ended_at if self.ended_at is not None else now) - self.started_at

    def signal_group(self, sig: Signals) -> None:
        """Send `sig` to the whole process group; a group already gone is not an error."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    def running_result(self) -> dict[str, Any]:
        """Bash's "backgrounded/running" output (docs/tools.md)."""
        return {
            "status": "running",
            "sessionId": self.session_id,
            "pid": self.pid,
            "startedAt": self.started_at,
            "tail": self.output.tail(),
            "workdir": self.workdir,
        }

    def completed_result(self) -> dict[str, Any]:
        """Bash's "completed" output (a timeout is reported as failed)."""
        ended = self.ended_at if self.ended_at is not None else self.started_at
        return {
            "status": self.status,
            "sessionId": self.session_id,
            "exitCode": self.exit_code,
            "signal": self.signal,
            "timedOut": self.timed_out,
            "startedAt": self.started_at,
            "endedAt": ended,
            "durationMs": ended - self.started_at,
            "output": self.output.text(),
            "tail": self.output.tail(),
            "truncated": self.output.truncated,
            "workdir": self.workdir,
        }


class _ShellProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """The stream protocol plus an event set when the shell exits.

    `Process.wait()` also waits for the output pipes to close, which a backgrounded
    child (`server &`) may hold open for hours; the exit itself is what ends a command.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=READ_CHUNK, loop=loop)
        self.exited = asyncio.Event()

    def process_exited(self) -> None:
        super().process_exited()
        self.exited.set()


async def _group_killed_if_cancelled(
    starting: Coroutine[Any, Any, tuple[asyncio.SubprocessTransport, _ShellProtocol]],
) -> tuple[asyncio.SubprocessTransport, _ShellProtocol]:
    """`loop.subprocess_exec(...)` run to its end even when the call is cancelled while the
    shell starts (the shell may have started children by then): asyncio would kill only
    the shell and leave them running, so here its whole process group is killed."""
    started = asyncio.ensure_future(starting)
    try:
        return await asyncio.shield(started)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):  # it failed to start: nothing runs
            transport, protocol = await started
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(transport.get_pid(), SIGKILL)
            await protocol.exited.wait()  # reaped, as asyncio does before it gives up
            transport.close()
        raise


async def _exits_reported(sessions: Iterable[ProcessSession]) -> None:
    """Wait until the loop has heard of each killed shell's exit. SIGKILL cannot be
    refused, but on a busy machine the report can take seconds: a loop closed before it
    leaves the child unreaped and its transport open (CI saw exactly that)."""
    waits = [asyncio.ensure_future(s.exited.wait()) for s in sessions if not s.exited.is_set()]
    if not waits:
        return
    _, late = await asyncio.wait(waits, timeout=EXIT_REPORT_SECONDS)
    for waiter in late:  # a process stuck in the kernel (D state): give up on it
        waiter.cancel()


def _end_event(session: ProcessSession) -> str:
    if session.timed_out:
        return "timed_out"
    return "finished" if session.status == "completed" else "failed"


class ProcessManager:
    """Starts shell processes and keeps backgrounded sessions for the Process tool."""

    def __init__(
        self,
        *,
        on_exec_event: ExecEventSink | None = None,
        clock: Clock = epoch_ms,
        retention_ms: int = RETENTION_MS,
        max_finished: int = MAX_FINISHED,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.sandbox: Sandbox = sandbox or NoSandbox("none given")
        self._on_exec_event = on_exec_event
        self._clock = clock
        self._retention_ms = retention_ms
        self._max_finished = max_finished
        self._live: dict[str, ProcessSession] = {}
        self._finished: dict[str, ProcessSession] = {}
        self._capturing: dict[str, ProcessSession] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def now(self) -> int:
        return self._clock()

    async def spawn(
        self, command: str, *, workdir: str, timeout_ms: int, keep_stdin: bool, confined: bool
    ) -> ProcessSession:
        """Start `command`, inside the sandbox when `confined` (and the node has one);
        without `keep_stdin` its stdin is at EOF from the start."""
        loop = asyncio.get_running_loop()
        # -l: owners rely on PATH from their login profile (nvm, pyenv). Writing a profile
        # or any other start-up file asks wherever it is (approval/policy.py
        # STARTUP_FILES); without -l zsh would still read ~/.zshenv
        argv = [login_shell(), "-lc", command]
        confined = confined and self.sandbox.active
        if confined:
            argv = self.sandbox.wrap(argv, workdir)
        starting = loop.subprocess_exec(
            lambda: _ShellProtocol(loop),
            *argv,
            cwd=workdir,
            env=shell_environment(os.environ),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        transport, protocol = await _group_killed_if_cancelled(starting)
        process = asyncio.subprocess.Process(transport, protocol, loop)
        if not keep_stdin and process.stdin is not None:
            process.stdin.close()
        session = ProcessSession(
            session_id=str(uuid.uuid4()),
            command=command,
            workdir=workdir,
            process=process,
            transport=transport,
            exited=protocol.exited,
            started_at=self._clock(),
            confined=confined,
        )
        self._live[session.session_id] = session
        self._own(self._supervise(session, timeout_ms))
        return session

    def background(self, session: ProcessSession) -> None:
        """Hand a running session over to the Process tool and report it as started."""
        session.backgrounded = True
        self._emit(session, "started")

    def find(self, session_id: str) -> ProcessSession | None:
        self._prune()
        return self._live.get(session_id) or self._finished.get(session_id)

    def listed(self) -> list[ProcessSession]:
        """Backgrounded sessions, running and recently finished, newest first."""
        self._prune()
        running = [s for s in self._live.values() if s.backgrounded]
        return sorted([*running, *self._finished.values()], key=lambda s: -s.started_at)

    async def close(self) -> None:
        """Kill every process group still running or holding its output pipe open.

        Children that detached their output (`nohup server > log 2>&1 &`) are left alone.
        """
        sessions = {s.session_id: s for s in [*self._live.values(), *self._capturing.values()]}
        for session in sessions.values():
            session.signal_group(SIGKILL)
        await _exits_reported(sessions.values())
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=CLOSE_WAIT_SECONDS)
        for session in sessions.values():
            session.transport.close()  # a detached child (setsid) still holds the pipe
        for task in set(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _supervise(self, session: ProcessSession, timeout_ms: int) -> None:
        reader = self._own(self._capture(session))
        try:
            try:
                async with asyncio.timeout(timeout_ms / 1000 if timeout_ms > 0 else None):
                    await session.exited.wait()
            except TimeoutError:
                session.timed_out = True
                await self._terminate(session)
            # Children that inherited the pipe may hold it open after the shell exits.
            await asyncio.wait({reader}, timeout=EXIT_DRAIN_SECONDS)
        finally:
            self._record_exit(session)

    async def _capture(self, session: ProcessSession) -> None:
        stdout = session.process.stdout
        assert stdout is not None
        self._capturing[session.session_id] = session
        try:
            while chunk := await stdout.read(READ_CHUNK):
                session.output.feed(chunk)
            session.output.close()
        finally:
            del self._capturing[session.session_id]

    async def _terminate(self, session: ProcessSession) -> None:
        session.signal_group(SIGTERM)
        await asyncio.sleep(KILL_GRACE_SECONDS)
        # Always, even if the shell is gone: a child ignoring SIGTERM must not survive.
        session.signal_group(SIGKILL)
        await session.exited.wait()

    def _record_exit(self, session: ProcessSession) -> None:
        returncode = session.transport.get_returncode()
        session.ended_at = self._clock()
        session.exit_code = returncode if returncode is not None and returncode >= 0 else None
        session.signal = signal_name(returncode)
        session.finished.set()
        self._live.pop(session.session_id, None)
        if session.backgrounded:
            self._finished[session.session_id] = session
            self._prune()
            self._emit(session, _end_event(session))

    def _emit(self, session: ProcessSession, event: str) -> None:
        if self._on_exec_event is None:
            return
        payload: dict[str, Any] = {
            "eventId": str(uuid.uuid4()),
            "sessionId": session.session_id,
            "event": event,
            "outputTail": session.output.tail(),
            "startedAt": session.started_at,
        }
        if event != "started":
            payload["exitCode"] = session.exit_code
            payload["endedAt"] = session.ended_at
            if session.signal is not None:
                payload["signal"] = session.signal
        try:
            self._on_exec_event(payload)
        except Exception:
            log.exception("exec event handler failed for session %s", session.session_id)

    def _prune(self) -> None:
        horizon = self._clock() - self._retention_ms
        expired = [
            sid
            for sid, s in self._finished.items()
            if s.ended_at is not None and s.ended_at < horizon
        ]
        for sid in expired:
            del self._finished[sid]
        while len(self._finished) > self._max_finished:
            del self._finished[next(iter(self._finished))]

    def _own(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task
