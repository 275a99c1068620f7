"""Soak: a gateway under months-like use in minutes, watched for growth.

    python -m bench.soak [--minutes 10] [--turns 20000] [--sessions 500] [--every 30]
    python -m bench.soak --quick        # about a minute, to try a change

One gateway process (bench/_servers.py) and an instant fake model (tests/fakes) take chat
turns over `--sessions` sessions from 8 concurrent senders, turns from 10 peers of a
channel adapter (`channel.inbound` over a channel-mode connection), a cron job every
minute, sub-agents (`gsv__Spawn`), web fetches of a page on 127.0.0.1 (`gsv__WebFetch`,
with `webFetch.allowPrivate`), node tool calls, and a real node daemon that is stopped and
started again every few minutes. It stops at `--turns` or `--minutes`, whichever is first.

Every `--every` seconds it prints the gateway's resident memory (VmRSS), open fds
(/proc/PID/fd), asyncio tasks (`gateway.status` `tasks`) and the database and WAL sizes
(`gateway.status` `storage`). At the baseline turn (2,000, or a tenth of `--turns` if
fewer) and at the end the senders pause until the gateway is idle with the node online,
and those two idle samples are compared: the targets are RSS growth under 10 MB, fds and
tasks flat (at most 2 more), the WAL, stat'ed every 0.2 s all along, never over 64 MB, and
every turn answered. A connection to the gateway that closes stops the soak at once, with
no verdict (every later turn would fail). Linux only (reads /proc).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import tempfile
import time
import uuid
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from bench._servers import gateway_child
from bench._soak_world import FETCH
from bench._soak_world import READ
from bench._soak_world import SPAWN
from bench._soak_world import NodeCycler
from bench._soak_world import model_turns
from bench._soak_world import node_cycler
from bench._soak_world import web_site
from gsv_core.errors import ConnectionClosed
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import fake_llm_server

SENDERS = 8  # concurrent chat senders (each turn waits for its run's final event)
PEERS = 10  # channel peers, each waits for its reply before its next message
MB = 1_000_000
WAL_TARGET = 64 * 1024 * 1024
RSS_GROWTH_TARGET = 10 * MB
FLAT_SLACK = 2  # fds and tasks "flat": at most this many more at the end


@dataclass
class Plan:
    minutes: float
    turns: int
    sessions: int
    every: float
    node_cycle: float  # seconds between node reconnects

    @property
    def baseline_turn(self) -> int:
        return min(2000, self.turns // 10)


@dataclass
class Sample:
    at: float
    turns: int
    rss: int
    fds: int
    tasks: int
    database: int
    wal: int

    def line(self, label: str = "") -> str:
        return (
            f"{self.at:7.0f}s {self.turns:6d} turns  rss {self.rss / MB:6.1f} MB  "
            f"fds {self.fds:4d}  tasks {self.tasks:4d}  db {self.database / MB:7.1f} MB  "
            f"wal {self.wal / MB:6.2f} MB {label}"
        )


@dataclass
class Soak:
    plan: Plan
    pid: int
    wal_path: Path
    owner: Any
    channel: Any
    node: NodeCycler
    llm: FakeLLMServer
    started: float = field(default_factory=time.monotonic)
    turns: int = 0
    failed: int = 0
    wal_max: int = 0
    running: asyncio.Event = field(default_factory=asyncio.Event)
    in_flight: int = 0
    waiting: dict[str, asyncio.Future[str]] = field(default_factory=dict)
    lost: str | None = None  # why a connection to the gateway closed: the soak stops

    def done(self) -> bool:
        out_of_time = time.monotonic() - self.started > self.plan.minutes * 60
        return self.lost is not None or self.turns >= self.plan.turns or out_of_time

    def on_event(self, frame: Any) -> None:
        """Resolve the turn a `chat` final/error or a `channel.outbound` reply ends."""
        payload = frame.payload or {}
        if frame.event == "chat" and payload.get("state") in ("final", "error"):
            key = payload.get("runId")
        elif frame.event == "channel.outbound":
            key = (payload.get("message") or {}).get("replyToId")
        else:
            return
        future = self.waiting.pop(str(key), None)
        if future is not None and not future.done():
            future.set_result(str(payload.get("state", "final")))

    async def turn(self, client: Any, method: str, params: dict[str, Any], key: str) -> None:
        await self.running.wait()
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.waiting[key] = future
        self.in_flight += 1
        try:
            await client.call(method, params, timeout=120)
            state = await asyncio.wait_for(future, 120)
            self.failed += state == "error"
        except ConnectionClosed as exc:  # every later turn would fail at once: stop
            self.failed += 1
            if self.lost is None:
                self.lost = str(exc)
                print(f"the connection to the gateway closed ({exc}): the soak stops")
        except Exception as exc:  # a turn that failed is counted, the soak goes on
            self.failed += 1
            print(f"turn failed: {type(exc).__name__}: {exc}")
        finally:
            self.waiting.pop(key, None)
            self.in_flight -= 1
            self.turns += 1

    async def sample(self) -> Sample:
        status = await self.owner.call("gateway.status")
        storage = status["storage"]
        return Sample(
            time.monotonic() - self.started, self.turns, rss_bytes(self.pid),
            len(os.listdir(f"/proc/{self.pid}/fd")), status["tasks"],
            storage["databaseBytes"], storage["walBytes"],
        )  # fmt: skip

    async def idle_sample(self) -> Sample:
        """Pause the senders, let the gateway finish what it has, node online; sample."""
        self.running.clear()
        for _ in range(1200):
            if self.in_flight == 0:
                break
            await asyncio.sleep(0.05)
        await self.node.online(self.owner)
        await asyncio.sleep(3)  # the last runs' tail work (ledger, index) and the WAL's pause
        sample = await self.sample()
        self.running.set()
        return sample


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def _message(n: int) -> str:
    """Every 100 turns: 1 sub-agent, 2 web fetches, 2 node tool calls; else a line."""
    tag = {0: SPAWN, 17: FETCH, 51: FETCH, 33: READ, 77: READ}.get(n % 100, "")
    return f"turn {n} {tag}".strip()


async def chat_sender(soak: Soak, numbers: Any) -> None:
    for n in numbers:
        if soak.done():
            return
        run_id = str(uuid.uuid4())
        params = {"sessionKey": f"soak-{n % soak.plan.sessions}", "message": _message(n),
                  "runId": run_id}  # fmt: skip
        await soak.turn(soak.owner, "chat.send", params, run_id)


async def channel_peer(soak: Soak, peer: int) -> None:
    for n in itertools.count():
        if soak.done():
            return
        message_id = f"p{peer}-{n}"
        params = {"channel": "soak", "accountId": "a1", "peer": {"kind": "dm", "id": f"p{peer}"},
                  "message": {"id": message_id, "text": f"hello {n}"}}  # fmt: skip
        await soak.turn(soak.channel, "channel.inbound", params, message_id)


async def watch_wal(soak: Soak) -> None:
    while not soak.done():
        soak.llm.requests.clear()  # the fake model keeps every request: not the gateway's
        with contextlib.suppress(FileNotFoundError):
            soak.wal_max = max(soak.wal_max, soak.wal_path.stat().st_size)
        await asyncio.sleep(0.2)


async def cycle_node(soak: Soak) -> None:
    while not soak.done():
        await asyncio.sleep(soak.plan.node_cycle)
        await soak.running.wait()
        await soak.node.cycle()


async def report_over_time(soak: Soak) -> None:
    while not soak.done():
        await asyncio.sleep(soak.plan.every)
        print((await soak.sample()).line(), flush=True)


async def baseline_at(soak: Soak) -> Sample | None:
    while soak.turns < soak.plan.baseline_turn:
        if soak.done():
            return None
        await asyncio.sleep(0.1)
    sample = await soak.idle_sample()
    print(sample.line("<- baseline (idle)"), flush=True)
    return sample


async def configure(owner: Any, llm: FakeLLMServer) -> None:
    settings = {
        "providers.fake": {"api": "openai", "baseUrl": llm.openai_base_url},
        "model": {"provider": "fake", "id": "soak-model"},
        "webFetch.allowPrivate": ["127.0.0.1"],
        "channels.soak": {"dmPolicy": "open"},
    }
    for path, value in settings.items():
        await owner.call("config.set", {"path": path, "value": value})
    job = {"name": "tick", "schedule": {"kind": "every", "everyMs": 60_000},
           "spec": {"mode": "task", "message": "cron tick"}}  # fmt: skip
    await owner.call("cron.add", job)


async def connect_channel(owner: Any, url: str, on_event: Any) -> Any:
    from gsv_core.client import ClientIdentity
    from gsv_core.client import GatewayClient

    code = (await owner.call("auth.invite", {"role": "channel", "subject": "soak"}))["code"]
    identity = ClientIdentity(mode="channel", id="soak-bridge", channel="soak",
                              account_id="a1", join_code=code)  # fmt: skip
    channel = GatewayClient(url, token=None, identity=identity, on_event=on_event)
    await channel.connect()
    return channel


async def soak(plan: Plan, pid: int, url: str, token: str, root: Path, llm: FakeLLMServer) -> int:
    from gsv_core.client import GatewayClient

    holder: list[Soak] = []

    def on_event(frame: Any) -> None:  # events before the Soak exists end no turn
        if holder:
            holder[0].on_event(frame)

    owner = GatewayClient(url, token=token, on_event=on_event)
    await owner.connect()
    await configure(owner, llm)
    channel = await connect_channel(owner, url, on_event)
    with node_cycler(url, token, root) as node:
        run = Soak(plan, pid, root / "gsv.db-wal", owner, channel, node, llm)
        holder.append(run)
        await node.online(owner)
        print(run_header(plan))
        first = await run.sample()
        print(first.line("<- start"), flush=True)
        run.running.set()
        numbers = itertools.count()
        work = [chat_sender(run, numbers) for _ in range(SENDERS)]
        work += [channel_peer(run, peer) for peer in range(PEERS)]
        # the watchers sleep between looks: stopped when the turns are done, not awaited
        watchers = [asyncio.create_task(c) for c in (watch_wal(run), cycle_node(run),
                                                     report_over_time(run))]  # fmt: skip
        baseline_task = asyncio.create_task(baseline_at(run))
        await asyncio.gather(*work)
        baseline = await baseline_task
        for watcher in watchers:
            watcher.cancel()
        await asyncio.gather(*watchers, return_exceptions=True)
        if run.lost is not None:
            print(f"no verdict: a connection to the gateway closed after {run.turns} turns")
            verdict = 1
        else:
            end = await run.idle_sample()
            print(end.line("<- end (idle)"), flush=True)
            verdict = judge(run, first, baseline, end)
    await channel.close()
    await owner.close()
    return verdict


def run_header(plan: Plan) -> str:
    return (
        f"soak: up to {plan.turns} turns over {plan.sessions} sessions + {PEERS} channel "
        f"peers, at most {plan.minutes:g} min; node reconnects every {plan.node_cycle:g} s; "
        f"baseline at turn {plan.baseline_turn}"
    )


def judge(run: Soak, first: Sample, baseline: Sample | None, end: Sample) -> int:
    llm_calls = f"{run.turns} turns ({run.failed} failed), {run.node.reconnects} node reconnects"
    print(f"{llm_calls} in {end.at:.0f} s ({run.turns / max(end.at, 1):.1f} turns/s)")
    if baseline is None:
        print("too few turns for a baseline: no verdict")
        return 1
    checks = [
        ("RSS growth after baseline < 10 MB", end.rss - baseline.rss < RSS_GROWTH_TARGET,
         f"{(end.rss - baseline.rss) / MB:+.1f} MB"),
        ("open fds flat", end.fds - baseline.fds <= FLAT_SLACK, f"{end.fds - baseline.fds:+d}"),
        ("asyncio tasks flat", end.tasks - baseline.tasks <= FLAT_SLACK,
         f"{end.tasks - baseline.tasks:+d}"),
        ("WAL never over 64 MB", run.wal_max <= WAL_TARGET, f"max {run.wal_max / MB:.2f} MB"),
        ("every turn answered", run.failed == 0, f"{run.failed} failed"),
    ]  # fmt: skip
    for name, ok, figure in checks:
        print(f"  {'OK  ' if ok else 'FAIL'} {name:<36} {figure}")
    print(f"  (from start: rss {(end.rss - first.rss) / MB:+.1f} MB, "
          f"db {(end.database - first.database) / MB:+.1f} MB)")  # fmt: skip
    return 0 if all(ok for _, ok, _ in checks) else 1


def parse_plan(argv: list[str] | None) -> Plan:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--turns", type=int, default=20_000)
    parser.add_argument("--sessions", type=int, default=500)
    parser.add_argument("--every", type=float, default=30.0, help="seconds between lines")
    parser.add_argument("--quick", action="store_true", help="about a minute")
    args = parser.parse_args(argv)
    if args.quick:
        return Plan(minutes=1.0, turns=3000, sessions=100, every=10.0, node_cycle=20.0)
    if not (0 < args.minutes <= 24 * 60 and 100 <= args.turns <= 10_000_000):
        parser.error("--minutes must be in (0, 1440] and --turns in [100, 10000000]")
    if not (1 <= args.sessions <= 100_000 and args.every >= 1):
        parser.error("--sessions must be in [1, 100000] and --every at least 1")
    return Plan(args.minutes, args.turns, args.sessions, args.every, node_cycle=180.0)


def main(argv: list[str] | None = None) -> None:
    plan = parse_plan(argv)
    with (
        tempfile.TemporaryDirectory() as tmp,
        web_site() as page,
        fake_llm_server() as llm,
        gateway_child(tmp) as (pid, url, token),
    ):
        llm.choose = model_turns(page)
        verdict = asyncio.run(soak(plan, pid, url, token, Path(tmp), llm))
    raise SystemExit(verdict)


if __name__ == "__main__":
    main()
