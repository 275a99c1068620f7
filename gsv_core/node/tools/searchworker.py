"""Child processes that run searches whose cost the node cannot bound (Grep's Python regex).

CPython's `re` holds the GIL for a whole match, and a backtracking pattern can take
years: in a worker thread it would freeze the node's event loop (heartbeats, other
tools, `tool.cancel`) and could not be stopped. So each search runs in a child process
in its own process group, asked over a pipe with one JSON line and answered with one:

    workers = SearchWorkers("gsv_core.node.tools.grep:search_job", deadline=300)
    reply = await workers.run({...})   # the handler's JSON result
    await workers.close()

A cancelled call, or one past `deadline` seconds, kills the child's process group (an
`rg` it started too); the next call starts a fresh one. A child that answered is kept
for the next call (at most MAX_IDLE of them), so an ordinary search pays a pipe round
trip, not a Python start-up (about 0.2 s, paid by the first call). An idle child exits
when the node's end of its pipe closes or after IDLE_EXIT seconds without a job (it holds
some 30 MB; the next call starts a fresh one), and a busy one whose node died is ended by
its own alarm at the deadline. Unix only, like the Bash tool's process groups.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import math
import os
import signal
import subprocess
import sys
import traceback
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import IO
from typing import Any

from gsv_core.errors import ToolFailed

MAX_IDLE = 2
IDLE_EXIT = 120  # seconds a kept child waits for its next job before it exits
# the child imports the handler's module; -P keeps the current directory off sys.path,
# and PYTHONPATH names where this gsv_core is (a node run from a checkout, not installed)
_CHILD_CODE = "from gsv_core.node.tools.searchworker import serve; serve()"
_GSV_ROOT = str(Path(__file__).resolve().parents[3])


class SearchWorkers:
    """A small pool of child processes running `handler` ("module:function") on jobs."""

    def __init__(self, handler: str, *, deadline: float, idle_exit: int = IDLE_EXIT) -> None:
        self.handler = handler
        self.deadline = deadline
        self.idle_exit = idle_exit
        self._idle: list[subprocess.Popen[bytes]] = []
        self._busy: set[subprocess.Popen[bytes]] = set()
        # a pool dropped without close() (a test, a rebuilt toolset) still ends its children
        self._finalizer = weakref.finalize(self, _end_all, self._idle, self._busy)

    @property
    def idle(self) -> list[int]:
        return [process.pid for process in self._idle]

    @property
    def busy(self) -> list[int]:
        return [process.pid for process in self._busy]

    async def run(self, job: dict[str, Any]) -> Any:
        """The handler's result for `job`; ToolFailed with its message when it raised
        ToolFailed, or when the search outlived the deadline."""
        reused = bool(self._idle)
        reply = await self._ask(self._idle.pop() if reused else self._start(), job)
        if reused and "gone" in reply:  # an idle child died meanwhile: not this job's fault
            reply = await self._ask(self._start(), job)
        return _result(reply)

    async def _ask(self, process: subprocess.Popen[bytes], job: dict[str, Any]) -> dict[str, Any]:
        self._busy.add(process)
        try:
            async with asyncio.timeout(self.deadline):
                reply = await asyncio.to_thread(_ask, process, job)
        except TimeoutError:
            await _end_soon(process)
            raise ToolFailed(
                f"the search was stopped after {self.deadline:g} s; narrow the pattern "
                "or the path (a regex with nested repetition can take forever)"
            ) from None
        except BaseException:
            await _end_soon(process)  # cancelled: nobody waits for the result
            raise
        finally:
            self._busy.discard(process)
        answered = "result" in reply or "error" in reply
        if answered and len(self._idle) < MAX_IDLE:
            self._idle.append(process)
        else:
            await asyncio.to_thread(_end, process)
        return reply

    async def close(self) -> None:
        self._finalizer()

    def _start(self) -> subprocess.Popen[bytes]:
        command = [sys.executable, "-P", "-c", _CHILD_CODE, self.handler, str(self.deadline),
                   str(self.idle_exit)]  # fmt: skip
        return subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_child_environment(),
            start_new_session=True,  # its own process group: an rg it runs dies with it
        )


def _child_environment() -> dict[str, str]:
    paths = [_GSV_ROOT, *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def _ask(process: subprocess.Popen[bytes], job: dict[str, Any]) -> dict[str, Any]:
    """Send one job and read its answer (in a worker thread: both may block)."""
    stdin, stdout = process.stdin, process.stdout
    assert stdin is not None and stdout is not None
    try:
        stdin.write(json.dumps(job).encode() + b"\n")
        stdin.flush()
        line = stdout.readline()
    except (OSError, ValueError):  # the child was killed under us
        line = b""
    if not line:
        return {"gone": "the search process ended without an answer"}
    reply: dict[str, Any] = json.loads(line)
    return reply


def _result(reply: dict[str, Any]) -> Any:
    if "error" in reply:
        raise ToolFailed(reply["error"])
    if "result" not in reply:  # the Toolset logs it as an internal error
        raise RuntimeError(reply.get("crash") or reply.get("gone"))
    return reply["result"]


async def _end_soon(process: subprocess.Popen[bytes]) -> None:
    """Kill at once; close and reap in a thread (the pipe's reader lets go when the
    child dies)."""
    _kill(process)
    await asyncio.to_thread(_end, process)


def _kill(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL to the child's process group (also an rg it started)."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


def _end(process: subprocess.Popen[bytes]) -> None:
    """Kill the child and what it started, close its pipes, reap it."""
    _kill(process)
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            _close(stream)
    process.wait()


def _close(stream: IO[bytes]) -> None:
    with contextlib.suppress(OSError):  # a broken pipe to a killed child
        stream.close()


def _end_all(idle: list[subprocess.Popen[bytes]], busy: set[subprocess.Popen[bytes]]) -> None:
    for process in [*idle, *busy]:
        _end(process)
    idle.clear()
    busy.clear()


# -- the child ----------------------------------------------------------------------------
def serve() -> None:
    """The child's loop: one JSON job per line on stdin, one JSON answer per line on
    stdout, until stdin closes. The alarm (default action: terminate) ends a search that
    outlives the deadline even when the node that asked for it is gone."""
    handler = _load(sys.argv[1])
    deadline = math.ceil(float(sys.argv[2])) + 1
    idle_exit = int(sys.argv[3])
    stdout = sys.stdout.buffer
    signal.alarm(idle_exit)  # waiting for a job: gone after a while, not kept for ever
    for line in sys.stdin.buffer:
        signal.alarm(deadline)
        try:
            reply = {"result": handler(json.loads(line))}
        except ToolFailed as exc:
            reply = {"error": exc.message}
        except Exception:
            reply = {"crash": traceback.format_exc()}
        stdout.write(json.dumps(reply).encode() + b"\n")
        stdout.flush()
        signal.alarm(idle_exit)


def _load(name: str) -> Callable[[dict[str, Any]], Any]:
    module, _, function = name.partition(":")
    handler: Callable[[dict[str, Any]], Any] = getattr(importlib.import_module(module), function)
    return handler
