"""Gateway CPU per agent turn, against gateway CPU per `config.get`, in one run.

    python -m bench.turn_profile [-n 300] [--watchers 2] [--profile]

The gateway runs in its own process (`bench._servers.metered_gateway`) and answers, on a
pipe, its own `time.process_time()`: the CPU seconds of the whole process, every thread
(the SQLite writer and `to_thread` workers too), at nanosecond resolution, with none of
the bench's, the fake LLM's or the other helpers' CPU in it. Wall time would count waiting
for the model and the machine's other load; /proc's utime is counted in 10 ms ticks.

A turn is one `chat.send` of one line answered by the test suite's instant fake LLM (the
real OpenAI SDK inside the gateway, over HTTP to 127.0.0.1) up to its `final` event, all
N turns in ONE session, so the history grows as it does in a long chat. The gateway's CPU
is read before every turn: a turn's figure is what the gateway spent from its `chat.send`
to the next one's (the run's closing work after `final` included). `--watchers K` keeps K
more clients connected (every client hears every event). After every 10 turns, 20
`config.get` round trips on the same connection give the baseline (interleaved, so both
figures meet the same load from the rest of the machine). What one CPU reading costs the
gateway (about 0.05 ms, measured at the start) is taken off both figures: a reading is
taken before every turn but only around every 20 config.gets. Each block of turns ends
`SETTLE` seconds after its last `final`, counted in that turn: what the turns left for
later (the index's catch-up write) is theirs, not the config.gets'.

Prints CPU per turn (first 20, last 20, all), CPU per `config.get`, their ratio and PASS
when a turn costs within 30x a `config.get` and the last 20 turns within 1.5x the first 20
(issue 41). Beside them: what one model call costs the official SDK alone, in a process of
its own posting the last turn's body to the same fake LLM (bench/floors.py), as a ratio
to a `config.get`, and the turn's ratio without it. With --profile, a further set of
turns in a fresh session runs under cProfile in the gateway (its event-loop thread, timed
by that thread's CPU clock) and the top cumulative entries are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import pstats
import statistics
import tempfile
import uuid
from collections.abc import AsyncIterator
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench._servers import MeteredGateway
from bench._servers import loop_name
from bench._servers import metered_gateway
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import fake_llm_server
from tests.fakes.llm_server import reply

TURN_RATIO_TARGET = 30.0  # a turn within 30x a config.get (issue 41)
FLAT_TARGET = 1.5  # the last 20 turns within 1.5x the first 20
EDGE = 20
WARM_UP = 5
BLOCK = 10  # turns between two runs of config.gets
GETS_PER_TURN = 2
# after each block of turns, before its config.gets: longer than the database's pause
# before a catch-up write (storage/db.py QUIET_DELAY), so none lands among the config.gets
SETTLE = 0.4


@dataclass(frozen=True)
class TurnFigures:
    """Gateway CPU seconds: each turn's, in order, and one config.get's."""

    turns: list[float]
    config_get: float
    reading: float = 0.0  # what one CPU reading cost, taken off both figures
    sdk_call: float | None = None  # the official SDK alone, per model call (bench/floors.py)

    @property
    def first(self) -> float:
        return statistics.fmean(self.turns[:EDGE])

    @property
    def last(self) -> float:
        return statistics.fmean(self.turns[-EDGE:])

    @property
    def mean(self) -> float:
        return statistics.fmean(self.turns)

    @property
    def ratio(self) -> float:
        return self.mean / self.config_get

    @property
    def growth(self) -> float:
        return self.last / self.first

    @property
    def passed(self) -> bool:
        return self.ratio <= TURN_RATIO_TARGET and self.growth <= FLAT_TARGET


async def _final(events: AsyncIterator[Any], run_id: str) -> None:
    async for frame in events:
        payload = frame.payload or {}
        if payload.get("runId") != run_id:
            continue
        if payload.get("state") == "error":
            raise RuntimeError(f"turn failed: {payload.get('error')}")
        if payload.get("state") == "final":
            return
    raise RuntimeError("the event stream ended")


async def timed_turns(
    client: Any, events: AsyncIterator[Any], llm: FakeLLMServer, key: str, count: int,
    cpu: Callable[[], float], settle: float = 0.0,
) -> list[float]:  # fmt: skip
    """Gateway CPU of each of `count` sequential turns in session `key`. With `settle`,
    the last turn's figure includes that many seconds after its `final`: what the turns
    left for later (the index's catch-up write waits for writes to pause) is theirs."""
    marks = [cpu()]
    for i in range(count):
        llm.enqueue(reply("Hello", " there."))
        run_id = str(uuid.uuid4())
        params = {"sessionKey": key, "message": f"message {i}", "runId": run_id}
        await client.call("chat.send", params)
        await asyncio.wait_for(_final(events, run_id), 60)
        if i == count - 1 and settle:
            await asyncio.sleep(settle)
        marks.append(cpu())
    return [after - before for before, after in itertools.pairwise(marks)]


async def _config_gets(client: Any, count: int, cpu: Callable[[], float]) -> float:
    before = cpu()
    for _ in range(count):
        await client.call("config.get", {"path": "model"})
    return (cpu() - before) / count


def reading_cost(cpu: Callable[[], float], count: int = 50) -> float:
    """The gateway CPU one `cpu()` reading itself costs (its command read, its answer
    written): taken before every turn and around every block of config.gets, it is the
    bench's cost, not theirs, so it is taken off both. The lowest of three runs: what the
    reading costs, without the machine's other load."""
    costs = []
    for _ in range(3):
        before = cpu()
        for _ in range(count):
            cpu()
        costs.append((cpu() - before) / (count + 1))
    return min(costs)


async def use_fake_llm(client: Any, llm: FakeLLMServer) -> None:
    provider = {"api": "openai", "baseUrl": llm.openai_base_url}
    await client.call("config.set", {"path": "providers.fake", "value": provider})
    await client.call("config.set", {"path": "model", "value": {"provider": "fake", "id": "m"}})


async def measure_turn_cpu(
    gateway: MeteredGateway, llm: FakeLLMServer, count: int = 300, watchers: int = 0,
    session_key: str = "bench-turns",
) -> TurnFigures:  # fmt: skip
    """Gateway CPU per turn over `count` turns in one session, and per config.get over
    twice as many calls made between them, on `gateway` answered by `llm` (bench/crowd.py
    can use this)."""
    from gsv_core.client import GatewayClient

    async with AsyncExitStack() as stack:
        client = await stack.enter_async_context(GatewayClient(gateway.url, token=gateway.token))
        for _ in range(watchers):
            await stack.enter_async_context(GatewayClient(gateway.url, token=gateway.token))
        await use_fake_llm(client, llm)
        events = client.events()
        await timed_turns(client, events, llm, f"{session_key}-warm-up", WARM_UP, gateway.cpu)
        await _config_gets(client, 50, gateway.cpu)  # warm up
        hook = reading_cost(gateway.cpu)
        # turns and config.gets take turns, a block of each at a time, so both meet the
        # same load from the rest of the machine
        turns: list[float] = []
        gets: list[float] = []
        for start in range(0, count, BLOCK):
            block = min(BLOCK, count - start)
            block_turns = await timed_turns(
                client, events, llm, session_key, block, gateway.cpu, settle=SETTLE
            )
            turns += [turn - hook for turn in block_turns]
            calls = GETS_PER_TURN * block
            gets.append(await _config_gets(client, calls, gateway.cpu) - hook / calls)
        return TurnFigures(turns, statistics.fmean(gets), hook)


async def profile_turns(gateway: MeteredGateway, llm: FakeLLMServer, count: int, out: Path) -> None:
    """`count` turns in a fresh session under cProfile inside the gateway; stats to `out`."""
    from gsv_core.client import GatewayClient

    async with GatewayClient(gateway.url, token=gateway.token) as client:
        events = client.events()
        gateway.profile()
        await timed_turns(client, events, llm, "bench-profiled", count, gateway.cpu)
        gateway.dump_profile(out)


def with_sdk_call(figures: TurnFigures, llm: FakeLLMServer, calls: int = 200) -> TurnFigures:
    """`figures` with the SDK's own CPU per model call (bench/floors.py), posting the last
    turn's request body (the longest history: the SDK's share is not understated) to the
    same fake LLM, answered with the turns' reply."""
    from bench.floors import WARM_UP
    from bench.floors import sdk_call_cpu

    body = json.dumps(llm.last_body).encode()
    llm.enqueue(*(reply("Hello", " there.") for _ in range(WARM_UP + calls)))
    return replace(figures, sdk_call=sdk_call_cpu(llm.openai_base_url, body, calls))


def report(figures: TurnFigures, watchers: int) -> None:
    count = len(figures.turns)
    print(f"{count} turns in one session, {watchers} extra watching clients, "
          f"gateway on {loop_name()}, CPU = the gateway process's process_time")  # fmt: skip
    print(f"CPU per turn, first {EDGE}     {figures.first * 1e3:8.2f} ms")
    print(f"CPU per turn, last {EDGE}      {figures.last * 1e3:8.2f} ms   "
          f"({figures.growth:.2f}x the first; target <= {FLAT_TARGET}x)")  # fmt: skip
    print(f"CPU per turn, all {count:<5}    {figures.mean * 1e3:8.2f} ms   "
          f"(median {statistics.median(figures.turns) * 1e3:.2f} ms)")  # fmt: skip
    print(f"CPU per config.get         {figures.config_get * 1e3:8.3f} ms")
    print(f"(one CPU reading cost {figures.reading * 1e3:.3f} ms: taken off both figures)")
    target = f"(target <= {TURN_RATIO_TARGET:.0f}x)"
    print(f"turn / config.get          {figures.ratio:8.1f}x   {target}")
    if figures.sdk_call is not None:
        sdk, get = figures.sdk_call, figures.config_get
        print(
            f"the official SDK alone     {sdk * 1e3:8.2f} ms   "
            f"({sdk / get:.1f}x a config.get: one model call, in a process of its own)"
        )
        print(f"turn without it / config.get {(figures.mean - sdk) / get:6.1f}x")  # fmt: skip
    print("PASS" if figures.passed else "FAIL")


def main(argv: list[str] | None = None) -> TurnFigures:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--count", type=int, default=300)
    parser.add_argument("--watchers", type=int, default=2, help="extra clients hearing events")
    parser.add_argument("--profile", action="store_true", help="then profile turns (cProfile)")
    parser.add_argument("--top", type=int, default=40, help="profile entries printed")
    parser.add_argument(
        "--sort", default="cumulative", help="profile order (a pstats key: cumulative, tottime)"
    )
    parser.add_argument("--stats", type=Path, help="keep the cProfile stats in this file")
    args = parser.parse_args(argv)
    count = max(2 * EDGE, min(args.count, 2000))  # bounded: the loop always ends
    watchers = max(0, min(args.watchers, 50))
    with (
        fake_llm_server() as llm,
        tempfile.TemporaryDirectory() as tmp,
        metered_gateway(tmp) as gateway,
    ):
        figures = asyncio.run(measure_turn_cpu(gateway, llm, count, watchers))
        figures = with_sdk_call(figures, llm)
        report(figures, watchers)
        if args.profile:
            stats_file = (args.stats or Path(tmp) / "turns.prof").resolve()
            profiled = min(count, 200)
            asyncio.run(profile_turns(gateway, llm, profiled, stats_file))
            print(f"\ncProfile of {profiled} turns in a fresh session (gateway loop thread):")
            pstats.Stats(str(stats_file)).sort_stats(args.sort).print_stats(args.top)
    return figures


if __name__ == "__main__":
    main()
