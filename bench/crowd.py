"""A crowd of chats at once: does the `chat.send` ack wait behind the runs' work?

    python -m bench.crowd [-n 100] [--bursts 3]

The gateway, the instant fake LLM (tests/fakes/llm_server.py, driven by the real OpenAI
SDK inside the gateway) and a `config.get` sampler each run in a process of their own;
the chatting clients run here. Measured in one run: the idle `config.get` round trip
(p50/p99); then `-n` connections, each sending one `chat.send` to its own session at the
same moment: ack p50/p99 and time to `final` p50/p99, while the sampler's own connection
measures `config.get` (p99). The burst runs twice: with clients that hear every session's
events, as a client of the original does (100 runs then make 100 x 100 event frames), and
with clients that `chat.subscribe` to their own session (the sampler to none), as gsv's
own clients do. Each kind of burst runs `--bursts` times, the two kinds in turn, and its
figures are taken over all of them (the ack p99 over 300 acks, not the second worst of
one burst's hundred, which moved by a fifth between runs of the same tree). Each figure
is printed with its ratio to the idle figure of the same percentile, then PASS or FAIL
for the targets of issue 41: ack p99 and crowded `config.get` p99 each within 50x the
idle `config.get` p99. Every wait is bounded (connect, ack, final, sampling).

Just before each burst its connections all send one `config.get` at once, once the
sampler is connected (a process starting on the same cores would slow it): the cheapest
request, asked by the same crowd. Its p99 (the "floor") is what the transport and the
event loop alone cost at that size, so the ack's p99 is also printed against it: a chat
that is stored and answered costs that many cheapest requests.

Before the bursts, two servers of bench/floors.py meet the same crowd: a raw websockets
echo (the transport and one event loop alone) and a raw server that stores each
`chat.send` frame through gsv's own writer before answering it (the least an ack that
keeps its message can cost). Each one's `-n` at once is printed against its own idle p99
(that ratio moves with the idle figure, as gsv's do), and gsv's ack against their crowd
p99s.

Then the CPU section (bench/turn_profile.py, `--turns`, 0 to skip): gateway CPU per turn
over `--turns` turns of one session against gateway CPU per `config.get` in the same run,
their ratio (target: within 30x) and whether the last turns cost what the first did, and
the CPU of one model call by the official SDK alone, the part of a turn that is not gsv's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from bench._servers import gateway_process
from bench._servers import loop_name
from bench.floors import echo_crowd
from bench.floors import report_floor
from bench.floors import store_crowd
from bench.rpc_latency import client_rtts
from bench.rpc_latency import percentile
from tests.fakes.llm_server import fake_llm_server

TARGET_RATIO = 50.0
IDLE_SAMPLES = 2000
CROWD_TIMEOUT = 120.0  # seconds for the whole burst, from the first send to the last final
SAMPLE_GAP = 0.005  # between the sampler's config.get calls: a steady trickle, not a flood
FLOOR_SETTLE = 0.3  # seconds between the sampler's connecting and the floor's burst


@dataclass
class Burst:
    """What one burst measured, in seconds."""

    acks: list[float] = field(default_factory=list)
    finals: list[float] = field(default_factory=list)
    crowded: list[float] = field(default_factory=list)  # config.get during the burst
    # config.get sent by every chatter at once, just before: the same crowd asking the
    # cheapest request, what the transport and the loop alone cost at that size
    floor: list[float] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # why, one line per failed chat

    def add(self, other: Burst) -> None:
        """Pool another burst's figures into these."""
        self.acks += other.acks
        self.finals += other.finals
        self.crowded += other.crowded
        self.floor += other.floor
        self.failed += other.failed


async def configure(url: str, token: str, llm_base_url: str) -> None:
    """Point the gateway at the fake LLM and run one chat to the end, so the burst
    measures a warm gateway (its provider SDK imported), as one that has served before."""
    from gsv_core.client import GatewayClient

    async with GatewayClient(url, token=token) as client:
        provider = {"api": "openai", "baseUrl": llm_base_url}
        await client.call("config.set", {"path": "providers.fake", "value": provider})
        await client.call("config.set", {"path": "model", "value": {"provider": "fake", "id": "m"}})
        events = client.events()
        params = {"sessionKey": "crowd-warm-up", "message": "hi", "runId": "warm-up"}
        await client.call("chat.send", params)
        async with asyncio.timeout(CROWD_TIMEOUT):
            async for frame in events:
                payload = frame.payload or {}
                if payload.get("runId") == "warm-up" and payload.get("state") == "final":
                    return


class _Chatter:
    """One connection sending one chat.send; notes when its ack and its final came."""

    def __init__(self, url: str, token: str, index: int) -> None:
        from gsv_core.client import GatewayClient

        self.session = f"crowd-{index}"
        self.run_id = f"crowd-run-{index}"
        self.final = asyncio.get_running_loop().create_future()
        self.client = GatewayClient(url, token=token, on_event=self._on_event)

    def _on_event(self, frame: Any) -> None:
        payload = frame.payload if isinstance(frame.payload, dict) else {}
        if payload.get("runId") != self.run_id or self.final.done():
            return
        if payload.get("state") in ("final", "error", "aborted"):
            self.final.set_result(payload.get("error") or payload["state"])

    async def follow_own(self) -> None:
        """`chat.subscribe` to its own session: it no longer hears the other runs."""
        await self.client.call("chat.subscribe", {"sessionKeys": [self.session]})

    async def ask(self, start: float, burst: Burst) -> None:
        """One `config.get`, sent with every other chatter's (the burst's floor)."""
        await self.client.call("config.get", {"path": "model"}, timeout=CROWD_TIMEOUT)
        burst.floor.append(time.perf_counter() - start)

    async def send(self, start: float, burst: Burst) -> None:
        params = {"sessionKey": self.session, "message": "hi", "runId": self.run_id}
        try:
            await self.client.call("chat.send", params, timeout=CROWD_TIMEOUT)
            burst.acks.append(time.perf_counter() - start)
            state = await asyncio.wait_for(self.final, CROWD_TIMEOUT)
        except Exception as exc:
            burst.failed.append(f"{type(exc).__name__}: {exc}")
            return
        if state == "final":
            burst.finals.append(time.perf_counter() - start)
        else:
            burst.failed.append(str(state))


async def _sample(url: str, token: str, ready: Any, done: Any, narrow: bool) -> list[float]:
    """config.get on its own connection until `done` is set (bounded in time); `narrow`:
    it follows no session's conversation (an admin command such as `gsv status`)."""
    from gsv_core.client import GatewayClient

    samples: list[float] = []
    async with GatewayClient(url, token=token) as client:
        if narrow:
            await client.call("chat.subscribe", {"sessionKeys": []})
        ready.set()
        deadline = time.perf_counter() + CROWD_TIMEOUT
        while not done.is_set() and time.perf_counter() < deadline:
            start = time.perf_counter()
            await client.call("config.get", {"path": "model"}, timeout=CROWD_TIMEOUT)
            samples.append(time.perf_counter() - start)
            await asyncio.sleep(SAMPLE_GAP)
    return samples


def _sampler_child(url: str, token: str, ready: Any, done: Any, out: Any, narrow: bool) -> None:
    """The sampler in a process of its own: the chatters here may read every session's
    events, which must not slow the sampler's own reading."""
    out.send(asyncio.run(_sample(url, token, ready, done, narrow)))


async def crowd(url: str, token: str, count: int, narrow: bool, first: int = 0) -> Burst:
    """`count` connections, each sending one chat.send at the same moment, while another
    process samples config.get. `narrow`: every connection `chat.subscribe`s first (each
    chatter to its own session, the sampler to none), as gsv's own clients do; else each
    hears every session's events, as a client of the original does. `first`: the number
    of the first chatter (each burst its own sessions)."""
    burst = Burst()
    chatters = [_Chatter(url, token, i) for i in range(first, first + count)]
    spawn = multiprocessing.get_context("spawn")
    ready, done = spawn.Event(), spawn.Event()
    receive, send = spawn.Pipe(duplex=False)
    sampler = spawn.Process(target=_sampler_child, args=(url, token, ready, done, send, narrow))
    sampler.start()
    try:
        async with contextlib.AsyncExitStack() as stack:
            await asyncio.wait_for(
                asyncio.gather(*(stack.enter_async_context(c.client) for c in chatters)), 60
            )
            if narrow:
                await asyncio.gather(*(c.follow_own() for c in chatters))
            if not await asyncio.to_thread(ready.wait, 60):
                raise RuntimeError("the config.get sampler did not connect")
            # the floor once the sampler is up: a process starting (its imports) on the
            # same two cores read 1.3-2x the floor of a quiet machine
            await asyncio.sleep(FLOOR_SETTLE)
            start = time.perf_counter()
            await asyncio.gather(*(c.ask(start, burst) for c in chatters))
            await asyncio.sleep(0.05)  # a call of the sampler's lands between the two
            start = time.perf_counter()
            await asyncio.gather(*(c.send(start, burst) for c in chatters))
            done.set()
            if await asyncio.to_thread(receive.poll, CROWD_TIMEOUT):
                burst.crowded = receive.recv()
    finally:
        done.set()
        sampler.join(30)
        if sampler.is_alive():
            sampler.kill()
    return burst


def _figure(name: str, value: float, idle: float, which: str) -> str:
    return f"{name:<34} {value * 1e3:9.2f} ms   {value / idle:8.1f}x idle {which}"


def _verdict(name: str, value: float, idle: float) -> bool:
    ok = value <= TARGET_RATIO * idle
    print(f"{'PASS' if ok else 'FAIL'}  {name} within {TARGET_RATIO:.0f}x idle config.get p99")
    return ok


def _p(samples: list[float], q: float) -> float:
    return percentile(samples, q) if samples else float("inf")  # nothing came back


def report_burst(
    count: int, idle: list[float], burst: Burst, how: str, bursts: int = 1
) -> dict[str, float]:
    """Print `bursts` bursts pooled; returns their figures (seconds) for a caller to
    collect. A p50 is compared with the idle p50, a p99 with the idle p99."""
    idle50, idle99 = _p(idle, 0.5), _p(idle, 0.99)
    figures = {
        "idle_config_get_p50": idle50,
        "idle_config_get_p99": idle99,
        "ack_p50": _p(burst.acks, 0.5),
        "ack_p99": _p(burst.acks, 0.99),
        "final_p50": _p(burst.finals, 0.5),
        "final_p99": _p(burst.finals, 0.99),
        "crowded_config_get_p99": _p(burst.crowded, 0.99),
        "floor_p99": _p(burst.floor, 0.99),
    }
    print(f"{count} chats at once, one connection each, instant fake LLM, on {loop_name()}; "
          f"{bursts} burst{'s' if bursts > 1 else ''}, figures over all")  # fmt: skip
    print(f"clients {how}")
    print(f"{'idle config.get p50':<34} {idle50 * 1e3:9.2f} ms")
    print(f"{'idle config.get p99':<34} {idle99 * 1e3:9.2f} ms")
    for name, key in (
        ("chat.send ack p50", "ack_p50"),
        ("chat.send ack p99", "ack_p99"),
        ("final p50", "final_p50"),
        ("final p99", "final_p99"),
        (f"config.get p99 in crowd (n={len(burst.crowded)})", "crowded_config_get_p99"),
        (f"config.get p99, {count} at once", "floor_p99"),
    ):
        which = "p50" if key.endswith("p50") else "p99"
        print(_figure(name, figures[key], idle50 if which == "p50" else idle99, which))
    if burst.failed:
        failed = f"{len(burst.failed)} of {count * bursts} chats failed or timed out"
        print(f"{failed}; first: {burst.failed[0]}")
    floor = figures["floor_p99"]
    print(f"chat.send ack p99 / the same crowd's config.get p99: "
          f"{figures['ack_p99'] / floor:.1f}x; crowded config.get p99 / it: "
          f"{figures['crowded_config_get_p99'] / floor:.1f}x")  # fmt: skip
    _verdict("ack p99", figures["ack_p99"], idle99)
    _verdict("crowded config.get p99", figures["crowded_config_get_p99"], idle99)
    return figures


def _llm_child(url_out: Any, stop: Any) -> None:
    with fake_llm_server() as llm:
        url_out.send(llm.openai_base_url)
        stop.wait(CROWD_TIMEOUT * 3)


@contextlib.contextmanager
def llm_process() -> Iterator[str]:
    """The instant fake LLM in a process of its own (the chatters here read 100 x 100
    events, and in one process with them it would answer late): yields its base URL."""
    spawn = multiprocessing.get_context("spawn")
    stop = spawn.Event()
    receive, send = spawn.Pipe(duplex=False)
    child = spawn.Process(target=_llm_child, args=(send, stop))
    child.start()
    try:
        if not receive.poll(60):
            raise RuntimeError("the fake LLM did not start")
        yield receive.recv()
    finally:
        stop.set()
        child.join(30)
        if child.is_alive():
            child.kill()


def burst_section(count: int, bursts: int = 1) -> dict[str, float]:
    """The bursts: their own gateway process and fake LLM; prints and returns their
    figures. Other sections (such as CPU per turn, bench/turn_profile.py) go beside it in
    main."""
    echo = echo_crowd(count, bursts, IDLE_SAMPLES)  # the transport alone, same run
    store = store_crowd(count, bursts, IDLE_SAMPLES)  # ... and a message kept, then answered
    with (
        llm_process() as llm_url,
        tempfile.TemporaryDirectory() as tmp,
        gateway_process(tmp) as (url, token),
    ):
        asyncio.run(configure(url, token, llm_url))
        idle = asyncio.run(client_rtts(url, token, IDLE_SAMPLES))
        every, narrow = Burst(), Burst()
        for n in range(bursts):  # the two kinds in turn: each meets the same machine
            every.add(asyncio.run(crowd(url, token, count, narrow=False, first=2 * n * count)))
            first = (2 * n + 1) * count
            narrow.add(asyncio.run(crowd(url, token, count, narrow=True, first=first)))
    how = "hear every session's events (the original's way)"
    figures = report_burst(count, idle, every, how, bursts)
    print()
    how = "chat.subscribe to their own session"
    subscribed = report_burst(count, idle, narrow, how, bursts)
    print()
    report_floor("raw websockets echo, the transport alone", echo, count)
    print(f"against it: chat.send ack p99 {figures['ack_p99'] / echo.crowd_p99:.1f}x"
          f" ({subscribed['ack_p99'] / echo.crowd_p99:.1f}x subscribed), config.get p99"
          f" {count} at once {figures['floor_p99'] / echo.crowd_p99:.1f}x")  # fmt: skip
    report_floor("a server that only stores each chat.send, then answers", store, count)
    print(f"against it: chat.send ack p99 {figures['ack_p99'] / store.crowd_p99:.1f}x"
          f" ({subscribed['ack_p99'] / store.crowd_p99:.1f}x subscribed)")  # fmt: skip
    for name, floor in (("the transport alone", echo), ("a stored ack alone", store)):
        if floor.ratio > TARGET_RATIO:
            print(f"(over {TARGET_RATIO:.0f}x for {name} in this run)")
    transport = {"echo_idle_p99": echo.idle_p99, "echo_crowd_p99": echo.crowd_p99,
                 "store_idle_p99": store.idle_p99, "store_crowd_p99": store.crowd_p99}  # fmt: skip
    return figures | {f"subscribed_{key}": value for key, value in subscribed.items()} | transport


def cpu_section(turns: int) -> dict[str, float]:
    """Gateway CPU per turn against CPU per `config.get` (bench/turn_profile.py)."""
    from bench._servers import metered_gateway
    from bench.turn_profile import EDGE
    from bench.turn_profile import measure_turn_cpu
    from bench.turn_profile import report
    from bench.turn_profile import with_sdk_call

    watchers = 2
    with (
        fake_llm_server() as llm,
        tempfile.TemporaryDirectory() as tmp,
        metered_gateway(tmp) as gateway,
    ):
        figures = asyncio.run(measure_turn_cpu(gateway, llm, max(2 * EDGE, turns), watchers))
        figures = with_sdk_call(figures, llm)
    print()
    report(figures, watchers)
    assert figures.sdk_call is not None
    return {"turn_cpu": figures.mean, "config_get_cpu": figures.config_get,
            "sdk_call_cpu": figures.sdk_call}  # fmt: skip


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--count", type=int, default=100, help="chats at once (1-1000)")
    parser.add_argument("--bursts", type=int, default=3, help="bursts of each kind (1-10)")
    parser.add_argument("--turns", type=int, default=100, help="turns for CPU (0: skip; <=2000)")
    args = parser.parse_args(argv)
    count = max(1, min(args.count, 1000))  # bounded
    figures = burst_section(count, max(1, min(args.bursts, 10)))
    if args.turns > 0:
        figures |= cpu_section(min(args.turns, 2000))
    print(json.dumps({k: round(v * 1e3, 3) for k, v in figures.items()}))
    return figures


if __name__ == "__main__":
    main()
