"""Idle nodes cost nothing: the gateway's CPU and memory with N connected idle nodes, and
`tools.list` at that size, beside the same gateway's figures with no node, in one run.

    python -m bench.idle_nodes [-n 1000] [--seconds 20] [--spread]

The gateway runs in its own process (bench._servers gateway). N light nodes in this
process each join with a one-time code (`auth.invite`) and connect in `node` mode with
the seven tools and the runtime info a real `gsv node run` sends; like a real node they
send a heartbeat (an unsolicited pong) on every mark of NodeSettings.heartbeat seconds of
the wall clock (gsv_core/client.py `beat`), ping every NodeSettings.ping_interval
(`node_ping_interval`: 300 s where TCP_USER_TIMEOUT exists, else 60 s) and otherwise stay
silent, so the gateway, which pings only a peer silent for its ping interval, never pings
them. The pings start at a random point of their period, as a fleet's do (its nodes
connected at different times), so a window shorter than the period sees their steady
rate. With `--spread` each node beats at a phase of its own instead (every period from a
random start), as nodes did before their beats fell on the clock's marks: the before of
that change, each pong then waking the gateway on its own.

Figures (issue 41, point 3): the gateway's idle CPU over `--seconds` (target under 1%),
its RSS (target within 110 MB at 1,000 nodes) and `tools.list` p50/p99 from a client
(target under 100 ms), beside an idle `config.get`. The idle CPU's floor is measured in
the same run: the same peers keeping the same time with a raw websockets server that only
reads (no keepalive of its own), its ratio printed beside the gateway's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import tempfile
import time
from collections.abc import Awaitable
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._servers import gateway_child
from bench._servers import loop_name
from bench._servers import server_child
from bench._servers import server_process
from bench.rpc_latency import percentile

MAX_NODES = 5000
MAX_SECONDS = 300.0
CONNECT_BATCH = 50  # nodes joining at once: a crowd, not a stampede
CALLS = 20  # config.get / tools.list samples per figure
BIG_CALLS = 50  # tools.list at the crowd, and as many of its floor


def _ticks(pid: int) -> int:
    """utime + stime of `pid`, in clock ticks (/proc/PID/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return int(fields[11]) + int(fields[12])


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc status")


async def idle_cpu_percent(pid: int, seconds: float) -> float:
    """The share of one core `pid` used while we only wait."""
    hz = os.sysconf("SC_CLK_TCK")
    start_ticks, start = _ticks(pid), time.monotonic()
    await asyncio.sleep(seconds)
    used = (_ticks(pid) - start_ticks) / hz
    return 100.0 * used / (time.monotonic() - start)


def node_hello() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The tools and runtime info a real node on this machine advertises."""
    from gsv_core.node.daemon import runtime_info
    from gsv_core.node.tools import build_toolset

    workspace = Path(tempfile.gettempdir())
    toolset = build_toolset(workspace)
    return toolset.definitions(), runtime_info(toolset, workspace)


class RawPeer:
    """A websocket speaking frames by hand: `call` sends a req and waits for its res."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self._ids = 0
        self.clocks: list[asyncio.Task[None]] = []  # a node's heartbeat and ping

    async def call(self, method: str, params: Any = None) -> Any:
        return _payload(method, await self.call_raw(method, params))

    async def call_raw(self, method: str, params: Any = None) -> dict[str, Any]:
        """The answer's frame as received, parsed only once it is here (this idle peer
        gets no event), so a timer around it sees the gateway, not our JSON decoding."""
        self._ids += 1
        frame: dict[str, Any] = {"type": "req", "id": str(self._ids), "method": method}
        if params is not None:
            frame["params"] = params
        await self.ws.send(json.dumps(frame))
        return await self.ws.recv()  # type: ignore[no-any-return]


def _payload(method: str, text: str) -> Any:
    reply = json.loads(text)
    if reply.get("type") != "res" or not reply["ok"]:
        raise RuntimeError(f"{method} refused: {reply}")
    return reply.get("payload")


def _connect_params(mode: str, peer_id: str, auth: dict[str, str]) -> dict[str, Any]:
    client = {"id": peer_id, "version": "bench", "platform": "linux", "mode": mode}
    return {"minProtocol": 1, "maxProtocol": 1, "client": client, "auth": auth}


async def open_peer(url: str, ping_interval: float | None = None) -> RawPeer:
    from websockets.asyncio.client import connect

    ws = await connect(
        url, compression=None, proxy=None, max_size=None, ping_interval=ping_interval
    )
    return RawPeer(ws)


async def owner(url: str, token: str) -> RawPeer:
    peer = await open_peer(url)
    await peer.call("connect", _connect_params("client", "bench-owner", {"token": token}))
    return peer


async def join_node(
    url: str, code: str, node_id: str, hello: tuple[list[Any], Any], spread: bool = False
) -> RawPeer:
    """A node as light as can be that keeps the real node's time (its settings' defaults)."""
    tools, runtime = hello
    peer = await open_peer(url)
    params = _connect_params("node", node_id, {"joinCode": code})
    await peer.call("connect", {**params, "tools": tools, "nodeRuntime": runtime})
    _keep_time(peer, spread)
    return peer


async def _from_random_phase(send: Callable[[], Awaitable[Any]], every: float) -> None:
    """`send()` every `every` seconds from a random point of the first period, as a
    fleet's nodes do what they started when they connected: the node's ping (its pong is
    not awaited: the gateway answering is what costs; all in one burst a minute after the
    joins would miss the `--seconds` window or crowd into it), and with `--spread` its
    heartbeat, each node at a phase of its own instead of on the clock's marks."""
    await asyncio.sleep(random.uniform(0, every))  # a phase, not a secret
    while True:
        await send()
        await asyncio.sleep(every)


def _keep_time(peer: RawPeer, spread: bool = False) -> None:
    """The real node's clocks on `peer`: its heartbeat and its ping (its settings'
    defaults); with `spread`, the heartbeat at a phase of its own (`_from_random_phase`)."""
    from gsv_core.client import beat
    from gsv_core.node.daemon import NodeSettings

    every = NodeSettings.heartbeat
    beats = _from_random_phase(peer.ws.pong, every) if spread else beat(peer.ws, every)
    peer.clocks = [
        asyncio.create_task(beats),
        asyncio.create_task(_from_random_phase(peer.ws.ping, NodeSettings.ping_interval)),
    ]


async def close_peers(peers: list[RawPeer]) -> None:
    for peer in peers:
        for clock in peer.clocks:
            clock.cancel()
        await peer.ws.close()


async def floor_cpu(count: int, seconds: float, spread: bool = False) -> float:
    """The idle CPU of a raw websockets server (`bench._servers` quiet) with `count`
    peers keeping the real node's time: what the heartbeats cost websockets alone."""
    with server_child("quiet") as (pid, url):
        peers: list[RawPeer] = []
        for first in range(0, count, CONNECT_BATCH):
            batch = min(CONNECT_BATCH, count - first)
            peers += await asyncio.gather(*(open_peer(url) for _ in range(batch)))
        for peer in peers:
            _keep_time(peer, spread)
        await asyncio.sleep(2.0)  # as long as the gateway's settle
        try:
            return await idle_cpu_percent(pid, seconds)
        finally:
            await close_peers(peers)


async def connect_nodes(
    url: str, admin: RawPeer, count: int, spread: bool = False
) -> list[RawPeer]:
    hello = node_hello()
    nodes: list[RawPeer] = []
    for first in range(0, count, CONNECT_BATCH):
        ids = [f"idle{n:05d}" for n in range(first, min(count, first + CONNECT_BATCH))]
        codes = [
            (await admin.call("auth.invite", {"role": "node", "subject": node_id}))["code"]
            for node_id in ids
        ]
        pairs = zip(codes, ids, strict=True)
        nodes += await asyncio.gather(*(join_node(url, c, i, hello, spread) for c, i in pairs))
    return nodes


async def latencies(peer: RawPeer, method: str, calls: int = CALLS) -> tuple[list[float], Any]:
    samples = []
    answer = ""
    for _ in range(calls):
        start = time.perf_counter()
        answer = await peer.call_raw(method, {})
        samples.append(time.perf_counter() - start)
    return samples, _payload(method, answer)


def _ms(samples: list[float]) -> str:
    p50, p99 = percentile(samples, 0.5), percentile(samples, 0.99)
    return f"p50 {p50 * 1e3:8.2f} ms   p99 {p99 * 1e3:8.2f} ms"


async def big_answers(admin: RawPeer, calls: int) -> tuple[list[float], list[float], Any]:
    """tools.list and, in turns with it, its floor: a raw websockets server sending an
    answer of the same size (in turns, so a burst of noise hits both alike)."""
    _, listed = await latencies(admin, "tools.list", 1)
    size = len(json.dumps(listed, separators=(",", ":"), ensure_ascii=False))
    ours: list[float] = []
    floor: list[float] = []
    with server_process("blob", str(size)) as blob_url:
        raw = await open_peer(blob_url)
        for _ in range(calls):
            ours += (await latencies(admin, "tools.list", 1))[0]
            start = time.perf_counter()
            await raw.ws.send("{}")
            await raw.ws.recv()
            floor.append(time.perf_counter() - start)
        await raw.ws.close()
    return ours, floor, listed


async def measure(
    pid: int, url: str, token: str, count: int, seconds: float, spread: bool = False
) -> None:
    from gsv_core.node.daemon import NodeSettings

    admin = await owner(url, token)
    await asyncio.sleep(1.0)  # the gateway's start-up work settles
    base_cpu = await idle_cpu_percent(pid, seconds)
    base_rss = rss_mb(pid)
    base_get, _ = await latencies(admin, "config.get")
    base_list, _ = await latencies(admin, "tools.list")
    started = time.monotonic()
    nodes = await connect_nodes(url, admin, count, spread)
    joined = time.monotonic() - started
    await asyncio.sleep(2.0)  # the joins' writes settle
    cpu = await idle_cpu_percent(pid, seconds)
    rss = rss_mb(pid)
    crowd_get, _ = await latencies(admin, "config.get")
    first, _ = await latencies(admin, "tools.list", 1)  # encodes what the crowd brought
    crowd_list, floor, listed = await big_answers(admin, BIG_CALLS)
    size = len(json.dumps(listed, separators=(",", ":"), ensure_ascii=False))
    node_tools = sum(1 for tool in listed["tools"] if tool["name"].startswith("idle"))
    await close_peers(nodes)
    await admin.ws.close()
    idle_floor = await floor_cpu(count, seconds, spread)
    print(f"gateway on {loop_name()}; {count} idle nodes joined in {joined:.1f} s; "
          f"CPU over {seconds:.0f} s of idleness")  # fmt: skip
    when = "at a phase of its own" if spread else "on the clock's marks"
    print(f"each node beats every {NodeSettings.heartbeat:g} s ({when}) "
          f"and pings every {NodeSettings.ping_interval:g} s")  # fmt: skip
    print(f"{'':<24}{'no node':>14}{f'{count} nodes':>14}{'ratio':>10}")
    print(f"{'idle CPU %':<24}{base_cpu:>14.2f}{cpu:>14.2f}")
    over_floor = cpu / max(idle_floor, 0.01)
    print(f"{'  raw websockets, same':<24}{'':>14}{idle_floor:>14.2f}{over_floor:>9.2f}x"
          f"   (the same peers' heartbeats to a server that only reads)")  # fmt: skip
    print(f"{'RSS MB':<24}{base_rss:>14.1f}{rss:>14.1f}{rss / base_rss:>9.2f}x")
    print(f"config.get, no node      {_ms(base_get)}")
    print(f"config.get, {count} nodes {_ms(crowd_get)}")
    print(f"tools.list, no node      {_ms(base_list)}")
    print(f"tools.list, first after the crowd joined {first[0] * 1e3:8.2f} ms")
    tools = len(listed["tools"])
    print(f"tools.list, {count} nodes {_ms(crowd_list)}   "
          f"({tools} tools, {node_tools} from nodes, {size / 1e6:.2f} MB)")  # fmt: skip
    print(f"raw websockets, same size  {_ms(floor)}   (a server answering {size / 1e6:.2f} MB)")
    ratio = percentile(crowd_list, 0.5) / percentile(floor, 0.5)
    print(f"tools.list at {count} nodes p50 / the same size's raw p50: {ratio:.2f}x")
    print(f"RSS per node: {(rss - base_rss) * 1024 / max(1, count):.1f} KB")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--nodes", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=20.0, help="idle CPU window")
    parser.add_argument(
        "--spread", action="store_true", help="each node beats at a phase of its own"
    )
    parser.add_argument("--tree", type=Path, help="run the gateway of this checkout (before/after)")
    args = parser.parse_args(argv)
    count = max(1, min(args.nodes, MAX_NODES))
    seconds = max(1.0, min(args.seconds, MAX_SECONDS))
    with (
        tempfile.TemporaryDirectory() as tmp,
        gateway_child(tmp, tree=args.tree) as (pid, url, token),
    ):
        asyncio.run(asyncio.wait_for(measure(pid, url, token, count, seconds, args.spread), 600))


if __name__ == "__main__":
    main()
