"""What the parts gsv stands on cost alone, measured in the same run as gsv's own figures,
so a target can be read against what is possible on the machine at hand.

- `echo_crowd`: a raw websockets echo server (bench/_servers.py, its own process) meets
  the crowd of bench/crowd.py: idle round trips on one connection, then `count`
  connections each sending one `config.get`-shaped frame at the same moment. No auth, no
  parsing, no handler: the transport and one event loop alone. Its crowd p99 is what any
  server on this stack pays for that crowd (its ratio to its own idle p99 moves with the
  idle figure, as the gateway's does).
- `store_crowd`: the same crowd, each sending a `chat.send`-shaped frame to a raw
  websockets server that stores it through gsv's own writer (storage/db.py: one thread,
  WAL, group commit) before answering: the least a `chat.send` ack can cost, as the ack
  must keep the message before it answers. What a real ack adds (auth, the session's
  lookup and row, directives and commands, the run it starts) is gsv's.
- `sdk_call_cpu`: the official OpenAI SDK, built as the gateway builds it
  (providers/sdk.py `sdk_client`, the SDK's aiohttp transport) and called as the
  gateway calls it (a body encoded already, streamed and read to its end), alone in a
  process of its own: its CPU per model call. A gateway turn makes one such call, so
  this part of a turn's CPU is the SDK's, not gsv's (bench/turn_profile.py).
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import tempfile
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any

from bench._servers import raw_socket
from bench._servers import server_process
from bench.rpc_latency import ECHO_FRAME
from bench.rpc_latency import echo_rtts
from bench.rpc_latency import percentile

CROWD_TIMEOUT = 60.0  # seconds for one burst of frames
CHILD_TIMEOUT = 120.0  # seconds for the SDK child's calls, all of them
WARM_UP = 20  # SDK calls made before the measured ones (connections, first-use imports)
# what the store floor is sent: a chat.send request's frame, as the crowd's chats are
CHAT_FRAME = json.dumps(
    {"type": "req", "id": "x", "method": "chat.send",
     "params": {"sessionKey": "crowd", "message": "hi"}}
)  # fmt: skip


@dataclass(frozen=True)
class FloorCrowd:
    """Seconds: idle round trips, and each crowd frame's time from the burst's start."""

    idle: list[float]
    crowd: list[float]

    @property
    def idle_p99(self) -> float:
        return percentile(self.idle, 0.99)

    @property
    def crowd_p99(self) -> float:
        return percentile(self.crowd, 0.99)

    @property
    def ratio(self) -> float:
        return self.crowd_p99 / self.idle_p99


async def _crowd(url: str, frame: str, count: int, bursts: int, idle_samples: int) -> FloorCrowd:
    # idle first, alone on the server, as bench/crowd.py measures the gateway's
    idle = await echo_rtts(url, idle_samples, frame)
    async with AsyncExitStack() as stack:
        sockets = await asyncio.gather(*(stack.enter_async_context(raw_socket(url))
                                         for _ in range(count)))  # fmt: skip
        crowd: list[float] = []
        for _ in range(bursts):
            await asyncio.sleep(0.3)  # the last burst's answers are all read
            start = time.perf_counter()

            async def one(ws: Any, start: float = start) -> None:
                await ws.send(frame)
                await ws.recv()
                crowd.append(time.perf_counter() - start)

            await asyncio.wait_for(asyncio.gather(*(one(ws) for ws in sockets)), CROWD_TIMEOUT)
        return FloorCrowd(idle, crowd)


def _check(count: int, bursts: int, idle_samples: int) -> None:
    if count < 1 or bursts < 1 or idle_samples < 1:
        raise ValueError("count, bursts and idle_samples must each be at least 1")


def echo_crowd(count: int, bursts: int, idle_samples: int = 2000) -> FloorCrowd:
    """The echo server's idle round trips and `bursts` crowds of `count` at once."""
    _check(count, bursts, idle_samples)
    with server_process("echo") as url:
        return asyncio.run(_crowd(url, ECHO_FRAME, count, bursts, idle_samples))


def store_crowd(count: int, bursts: int, idle_samples: int = 2000) -> FloorCrowd:
    """The same for the server that stores each frame before answering it (its database
    in a temporary directory)."""
    _check(count, bursts, idle_samples)
    with tempfile.TemporaryDirectory() as data, server_process("store", data) as url:
        return asyncio.run(_crowd(url, CHAT_FRAME, count, bursts, idle_samples))


def report_floor(name: str, figures: FloorCrowd, count: int) -> None:
    print(f"{name}: idle p99 {figures.idle_p99 * 1e3:.2f} ms;"
          f" {count} at once p99 {figures.crowd_p99 * 1e3:.2f} ms,"
          f" {figures.ratio:.1f}x its idle p99")  # fmt: skip


async def _sdk_calls(base_url: str, body: bytes, calls: int) -> float:
    import httpx2
    import openai

    from gsv_core.providers.openai_compat import COMPLETIONS_PATH
    from gsv_core.providers.sdk import sdk_client

    client = sdk_client(openai.AsyncOpenAI, openai.DefaultAioHttpClient, "bench", base_url, 30.0)

    async def one() -> None:
        response = await client.post(
            COMPLETIONS_PATH, cast_to=httpx2.Response, content=body, stream=True
        )
        try:
            async for _ in response.aiter_bytes():
                pass
        finally:
            await response.aclose()

    async with client:
        for _ in range(WARM_UP):
            await one()
        before = time.process_time()
        for _ in range(calls):
            await one()
        return (time.process_time() - before) / calls


def _sdk_child(base_url: str, body: bytes, calls: int, out: Any) -> None:
    try:
        out.send(("ok", asyncio.run(_sdk_calls(base_url, body, calls))))
    except Exception as exc:  # told to the parent, which raises it as a RuntimeError
        out.send(("error", f"{type(exc).__name__}: {exc}"))


def sdk_call_cpu(base_url: str, body: bytes, calls: int = 200) -> float:
    """CPU seconds per streamed model call of the official SDK alone, posting `body` to
    `base_url` (an OpenAI-compatible server answering `WARM_UP + calls` requests)."""
    if calls < 1:
        raise ValueError("calls must be at least 1")
    spawn = multiprocessing.get_context("spawn")
    receive, send = spawn.Pipe(duplex=False)
    child = spawn.Process(target=_sdk_child, args=(base_url, body, calls, send))
    child.start()
    # the answer, or the child's end without one (it crashed): whichever comes first
    wait([receive, child.sentinel], CHILD_TIMEOUT)
    answered = receive.poll()
    if not answered:
        child.kill()
    child.join(30)
    if not answered:
        raise RuntimeError(
            f"the SDK calls to {base_url} gave no answer (exit code {child.exitcode})"
        )
    status, value = receive.recv()
    if status != "ok":
        raise RuntimeError(f"the SDK calls to {base_url} failed: {value}")
    return float(value)
