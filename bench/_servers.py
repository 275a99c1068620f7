"""Servers for the benchmarks, each run in its own process so client and server use both cores.

    python -m bench._servers echo          # raw websockets echo (text and binary)
    python -m bench._servers gateway DIR   # a real gsv gateway with its database in DIR
    python -m bench._servers metered-gateway DIR  # ... that answers CPU/profile commands
    python -m bench._servers peer URL      # a raw websockets client echoing what URL sends
    python -m bench._servers blob SIZE     # raw websockets: any text is answered with SIZE bytes
    python -m bench._servers store DIR     # raw websockets: each request stored, then answered
    python -m bench._servers floor-gateway # the protocol floor's gateway (bench._protocol_floor)
    python -m bench._servers floor-node URL DIR   # ... and its node, reading files in DIR

Each prints its ws:// URL on the first stdout line (the gateway: then its owner token)
and serves until stdin closes.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from collections.abc import Iterator
from contextlib import asynccontextmanager
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_NO_KEYRING = "keyring.backends.fail.Keyring"  # secrets go to GSV_HOME's 0600 file
STORE_TABLE = "floor_frames"  # the `store` server's rows, in DIR/floor.db


async def _until_stdin_closes() -> None:
    await asyncio.to_thread(sys.stdin.read)


async def _echo() -> None:
    async def echo(ws: Any) -> None:
        async for message in ws:
            await ws.send(message)

    await _serve_raw(echo)


async def _sink() -> None:
    """Binary throughput baseline: swallow binary frames; answer a text frame with the
    number of bytes received so far."""
    from websockets.asyncio.server import ServerConnection
    from websockets.asyncio.server import serve

    async def sink(ws: ServerConnection) -> None:
        received = 0
        async for message in ws:
            if isinstance(message, bytes):
                received += len(message)
            else:
                await ws.send(str(received))

    async with serve(sink, "127.0.0.1", 0, compression=None, max_size=None) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        print(f"ws://127.0.0.1:{port}/", flush=True)
        await _until_stdin_closes()


async def _quiet() -> None:
    """Idle-peer baseline: a raw websockets server that reads what comes and answers
    nothing, with no keepalive of its own (the gateway pings only silent peers): what
    idle peers' heartbeats cost websockets alone (bench/idle_nodes.py)."""
    from websockets.asyncio.server import ServerConnection
    from websockets.asyncio.server import serve

    async def read(ws: ServerConnection) -> None:
        async for _ in ws:
            pass

    kwargs: dict[str, Any] = {"compression": None, "max_size": None, "ping_interval": None}
    async with serve(read, "127.0.0.1", 0, **kwargs) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        print(f"ws://127.0.0.1:{port}/", flush=True)
        await _until_stdin_closes()


async def _blob(size: int) -> None:
    """Large-answer baseline: any text frame is answered with a text frame of `size`
    characters, made once (a floor for a big answer such as tools.list at many nodes)."""
    answer = "x" * size

    async def blob(ws: Any) -> None:
        async for _ in ws:
            await ws.send(answer)

    await _serve_raw(blob)


async def _store(data_dir: str) -> None:
    """Durable-ack baseline: each text frame, a request (`{"id": ...}`), is stored whole as
    one row through gsv's own writer (storage/db.py: its thread, WAL, group commit) and
    answered `ok` once committed: what any server that keeps a message before answering
    it pays, with no auth, no session, no run. A frame that is not a request is answered
    `ok: false` and nothing is stored."""
    import json

    from gsv_core.storage.db import Database

    db = await Database.open(Path(data_dir) / "floor.db")
    await db.execute(
        f"CREATE TABLE IF NOT EXISTS {STORE_TABLE} (id TEXT NOT NULL, frame TEXT NOT NULL)"
    )

    insert = f"INSERT INTO {STORE_TABLE} (id, frame) VALUES (?, ?)"

    async def store(ws: Any) -> None:
        async for frame in ws:
            try:
                if not isinstance(frame, str):
                    raise TypeError("a binary frame")
                request_id = json.loads(frame)["id"]
            except (ValueError, TypeError, KeyError):
                error = {"message": "not a request: a JSON object with an id is expected"}
                await ws.send(json.dumps({"type": "res", "id": None, "ok": False, "error": error}))
                continue
            await db.execute(insert, (str(request_id), frame))
            reply = {"type": "res", "id": request_id, "ok": True, "payload": {"status": "started"}}
            await ws.send(json.dumps(reply))

    try:
        await _serve_raw(store)
    finally:
        await db.close()


async def _serve_raw(handler: Any) -> None:
    """A raw websockets server on 127.0.0.1 until stdin closes; its URL first on stdout."""
    from websockets.asyncio.server import serve

    async with serve(handler, "127.0.0.1", 0, compression=None, max_size=None) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        print(f"ws://127.0.0.1:{port}/", flush=True)
        await _until_stdin_closes()


async def _relay() -> None:
    """Two-hop baseline: a message from the first connection is forwarded to the second
    (the "node"), whose answer goes back to the first: the shape of a node tool call."""
    from websockets.asyncio.server import ServerConnection
    from websockets.asyncio.server import serve

    peers: list[ServerConnection] = []

    async def relay(ws: ServerConnection) -> None:
        peers.append(ws)
        try:
            async for message in ws:
                other = peers[0] if ws is peers[-1] and len(peers) > 1 else peers[-1]
                await other.send(message)
        finally:
            peers.remove(ws)  # the next pair of connections starts afresh

    async with serve(relay, "127.0.0.1", 0, compression=None, max_size=None) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        print(f"ws://127.0.0.1:{port}/", flush=True)
        await _until_stdin_closes()


async def _peer(url: str) -> None:
    """The relay's echoing peer in a process of its own, as a node is: it says "ready"
    once connected, echoes every message, and leaves cleanly when stdin closes."""
    async with raw_socket(url) as ws:

        async def echo() -> None:
            async for message in ws:  # type: ignore[attr-defined]
                await ws.send(message)  # type: ignore[attr-defined]

        await ws.send("ready")  # type: ignore[attr-defined]
        print(url, flush=True)  # server_process waits for a first line
        echoing = asyncio.create_task(echo())
        await _until_stdin_closes()
        echoing.cancel()


async def _gateway(data_dir: str) -> None:
    from gsv_core.gateway.server import ServerConfig
    from gsv_core.gateway.server import serve

    # the owner token is kept in GSV_HOME's store: a throwaway one, never yours
    os.environ.update(GSV_HOME=data_dir, PYTHON_KEYRING_BACKEND=_NO_KEYRING)
    # a process of its own, as `gsv gateway run` is: its heap frozen as there (heap.py)
    config = ServerConfig(database=Path(data_dir) / "gsv.db", freeze_heap=True)
    async with serve(config, port=0) as running:
        print(running.url, running.token, flush=True)
        await _until_stdin_closes()


async def _metered_gateway(data_dir: str) -> None:
    """A gateway that reads commands on stdin, one a line, and answers each on stdout:
    `cpu` -> its own process CPU seconds (all threads; `time.process_time`), `profile` ->
    starts cProfile on the event loop's thread, timed by that thread's CPU clock (so waits
    in `epoll` and other processes' load do not count), `dump PATH` -> stops it and writes the
    stats to PATH. The bench's own hooks: nothing of this is in the gateway's code."""
    import cProfile
    import time

    from gsv_core.gateway.server import ServerConfig
    from gsv_core.gateway.server import serve

    os.environ.update(GSV_HOME=data_dir, PYTHON_KEYRING_BACKEND=_NO_KEYRING)
    profiler: cProfile.Profile | None = None
    # stdin read on the loop, not in a thread: a reading is taken before every turn, and
    # a thread hop per reading would cost the gateway more CPU than a config.get
    commands = asyncio.StreamReader()
    loop = asyncio.get_running_loop()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(commands), sys.stdin)
    # a process of its own, as `gsv gateway run` is: its heap frozen as there (heap.py)
    config = ServerConfig(database=Path(data_dir) / "gsv.db", freeze_heap=True)
    async with serve(config, port=0) as running:
        print(running.url, running.token, flush=True)
        while line := (await commands.readline()).decode():
            # back on the loop's thread here: cProfile follows the thread that enables it
            command, _, arg = line.strip().partition(" ")
            if command == "cpu":
                print(f"{time.process_time():.9f}", flush=True)
            elif command == "profile":
                profiler = cProfile.Profile(time.thread_time)  # CPU, not waits
                profiler.enable()
                print("ok", flush=True)
            elif command == "dump" and profiler is not None:
                profiler.disable()
                profiler.dump_stats(arg)
                print("ok", flush=True)
            else:
                print(f"unknown command {line.strip()!r}", flush=True)


class MeteredGateway:
    """The parent's side of `metered-gateway`: its URL, owner token and commands."""

    def __init__(self, proc: subprocess.Popen[str], url: str, token: str) -> None:
        self.pid, self.url, self.token = proc.pid, url, token
        self._proc = proc

    def _ask(self, command: str) -> str:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(command + "\n")
        self._proc.stdin.flush()
        return self._proc.stdout.readline().strip()

    def cpu(self) -> float:
        """The gateway process's CPU seconds so far (user + system, every thread)."""
        return float(self._ask("cpu"))

    def profile(self) -> None:
        self._ask("profile")

    def dump_profile(self, path: Path) -> None:
        self._ask(f"dump {path}")


@contextmanager
def metered_gateway(data_dir: str, tree: Path | None = None) -> Iterator[MeteredGateway]:
    """A gateway (database and GSV_HOME in `data_dir`) that reports its own CPU time."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench._servers", "metered-gateway", data_dir],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=tree, env=_code_from(tree),
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().split()
        if len(first) != 2:
            raise RuntimeError("the metered gateway did not start")
        yield MeteredGateway(proc, *first)
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen[str]) -> None:
    """A child server stops when its stdin closes; killed if it has not within 30 s."""
    assert proc.stdin is not None
    proc.stdin.close()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()  # or the pipe is left for the garbage collector to warn of


@contextmanager
def server_process(*args: str, tree: Path | None = None) -> Iterator[str]:
    """Start a benchmark server in a child process; yields its URL; stops it on exit.
    With `tree`, it runs that checkout's code (bench/ab.py)."""
    with server_child(*args, tree=tree) as (_, url):
        yield url


@contextmanager
def server_child(*args: str, tree: Path | None = None) -> Iterator[tuple[int, str]]:
    """`server_process` that also yields the child's process id (bench/session_memory.py
    reads its memory): (pid, first line)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench._servers", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=tree,
        env=_code_from(tree),
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url:
            raise RuntimeError(f"benchmark server {args} did not start")
        yield proc.pid, url
    finally:
        _stop(proc)


@contextmanager
def gateway_process(data_dir: str, tree: Path | None = None) -> Iterator[tuple[str, str]]:
    """A gateway with its database and GSV_HOME in `data_dir`: yields (url, owner token)."""
    with gateway_child(data_dir, tree=tree) as (_, url, token):
        yield url, token


@contextmanager
def gateway_child(data_dir: str, tree: Path | None = None) -> Iterator[tuple[int, str, str]]:
    """`gateway_process` that also yields its process id: (pid, url, owner token)."""
    with server_child("gateway", data_dir, tree=tree) as (pid, line):
        url, token = line.split()
        yield pid, url, token


@contextmanager
def node_process(
    url: str, token: str, node_id: str, workspace: Path, home: Path, tree: Path | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """`gsv node run` for the gateway at `url`, serving `workspace` (created if missing)
    with GSV_HOME `home`; it enrolls itself with the owner `token`, as a node on the
    gateway's machine does; with `tree`, that checkout's code. Stopped on exit."""
    workspace.mkdir(parents=True, exist_ok=True)
    env = {**_code_from(tree), "GSV_HOME": str(home), "GSV_TOKEN": token,
           "PYTHON_KEYRING_BACKEND": _NO_KEYRING}  # fmt: skip
    node = subprocess.Popen(
        [sys.executable, "-m", "gsv_cli", "--url", url, "node", "run", "--id", node_id,
         "--workspace", str(workspace), "--no-log-stderr"],
        cwd=tree, env=env, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        yield node
    finally:
        node.terminate()
        node.wait(timeout=30)


def _code_from(tree: Path | None) -> dict[str, str]:
    """The environment of a child process importing gsv from `tree` (else this one)."""
    return {**os.environ, "PYTHONPATH": str(tree)} if tree is not None else dict(os.environ)


@asynccontextmanager
async def raw_socket(url: str) -> AsyncIterator[object]:
    from websockets.asyncio.client import connect

    async with connect(url, compression=None, proxy=None, max_size=None) as ws:
        yield ws


def _run(main: Any) -> None:
    """Run a server on uvloop when installed, as `gsv gateway run` does (same for both)."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
        return
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(main)


def loop_name() -> str:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


if __name__ == "__main__":
    kind = sys.argv[1]
    if kind == "echo":
        _run(_echo())
    elif kind == "sink":
        _run(_sink())
    elif kind == "relay":
        _run(_relay())
    elif kind == "quiet":
        _run(_quiet())
    elif kind == "blob":
        _run(_blob(int(sys.argv[2])))
    elif kind == "store":
        _run(_store(sys.argv[2]))
    elif kind == "peer":
        _run(_peer(sys.argv[2]))
    elif kind == "gateway":
        _run(_gateway(sys.argv[2]))
    elif kind == "metered-gateway":
        _run(_metered_gateway(sys.argv[2]))
    elif kind == "floor-gateway":
        from bench import _protocol_floor

        _run(_protocol_floor.gateway(_until_stdin_closes))
    elif kind == "floor-node":
        from bench import _protocol_floor

        _run(_protocol_floor.node(sys.argv[2], sys.argv[3], _until_stdin_closes))
    else:
        raise SystemExit(f"unknown server {kind!r}")
