"""Node tool round trip: `tool.invoke` of Read on a small file, client -> gateway -> node
-> back, against the raw websockets echo RTT measured in the same run.

    python -m bench.tool_roundtrip [-n 2000]

The gateway, the node (`gsv node run`) and the echo server each run in their own process
on 127.0.0.1. Target: p50 within 3x of the echo RTT, and within 1.5x of
the two-hop relay floor (the relay's echoing peer in the client's process). The same
relay with its peer in a process of its own, as the node is, is printed beside it: on a
2-core machine a third process costs on every hop, which no code of ours can remove.

The protocol floor (bench/_protocol_floor.py) is the same call said by the least code
that still speaks seed 001: a JSON req, evt, req, res and ack through a gateway and a
node of a few lines each, in their own processes. tool.invoke over it is what our
gateway, node and client add: auth, validation, the approval policy, timeouts, tasks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

from bench._servers import gateway_process
from bench._servers import loop_name
from bench._servers import node_process
from bench._servers import server_process
from bench.rpc_latency import echo_rtts
from bench.rpc_latency import percentile
from bench.rpc_latency import summary

NODE_ID = "bench"


async def invoke_rtts(url: str, token: str, count: int) -> list[float]:
    from gsv_core.client import GatewayClient

    async with GatewayClient(url, token=token) as client:
        for _ in range(500):  # bounded wait for the node to register
            tools = (await client.call("tools.list"))["tools"]
            if any(tool["name"] == f"{NODE_ID}__Read" for tool in tools):
                break
            await asyncio.sleep(0.02)
        else:
            raise RuntimeError("the node never registered")
        args = {"tool": f"{NODE_ID}__Read", "args": {"path": "small.txt"}}
        samples = []
        for _ in range(count):
            start = time.perf_counter()
            result = await client.call("tool.invoke", args)
            samples.append(time.perf_counter() - start)
        assert result["result"]["lines"] == 3
    return samples


def serving_small_file(folder: Path) -> Path:
    """The node workspace under `folder`, holding the small file the calls read."""
    workspace = folder / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "small.txt").write_text("one\ntwo\nthree\n")
    return workspace


async def relay_rtts(url: str, count: int) -> list[float]:
    """Client -> relay -> echoing peer -> relay -> client: the two-hop floor."""
    from bench._servers import raw_socket

    async with raw_socket(url) as client, raw_socket(url) as peer:

        async def echo() -> None:
            async for message in peer:  # type: ignore[attr-defined]
                await peer.send(message)  # type: ignore[attr-defined]

        echoing = asyncio.create_task(echo())
        frame = '{"type":"evt","event":"tool.invoke","payload":{"path":"small.txt"}}'
        samples = []
        for _ in range(count):
            start = time.perf_counter()
            await client.send(frame)  # type: ignore[attr-defined]
            await client.recv()  # type: ignore[attr-defined]
            samples.append(time.perf_counter() - start)
        echoing.cancel()
    return samples


async def separate_relay_rtts(url: str, count: int) -> list[float]:
    """The two-hop floor with the echoing peer in its own process (bench._servers peer)."""
    from bench._servers import raw_socket
    from bench._servers import server_process

    async with raw_socket(url) as client:
        # connected first, the client is the relay's first peer; the echoing one is next
        with server_process("peer", url):
            assert await client.recv() == "ready"  # type: ignore[attr-defined]
            frame = '{"type":"evt","event":"tool.invoke","payload":{"path":"small.txt"}}'
            samples = []
            for _ in range(count):
                start = time.perf_counter()
                await client.send(frame)  # type: ignore[attr-defined]
                await client.recv()  # type: ignore[attr-defined]
                samples.append(time.perf_counter() - start)
    return samples


async def floor_rtts(url: str, count: int) -> list[float]:
    """A raw client's tool.invoke through the protocol floor's gateway and node."""
    from bench._servers import raw_socket

    params = {"tool": f"{NODE_ID}__Read", "args": {"path": "small.txt"}}
    async with raw_socket(url) as client:
        samples = []
        for number in range(count):
            start = time.perf_counter()
            frame = {"type": "req", "id": str(number), "method": "tool.invoke", "params": params}
            await client.send(json.dumps(frame))  # type: ignore[attr-defined]
            reply = json.loads(await client.recv())  # type: ignore[attr-defined]
            samples.append(time.perf_counter() - start)
    assert reply["payload"]["result"]["lines"] == 3
    return samples


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--count", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5, help="interleaved blocks of calls")
    args = parser.parse_args(argv)
    count = max(10, min(args.count, 50_000))
    rounds = max(1, min(args.rounds, 20))
    block = max(1, count // rounds)
    echo: list[float] = []
    relay: list[float] = []
    separate: list[float] = []
    floor: list[float] = []
    samples: list[float] = []
    with (
        server_process("echo") as echo_url,
        server_process("relay") as relay_url,
        server_process("floor-gateway") as floor_url,
        tempfile.TemporaryDirectory() as tmp,
        gateway_process(tmp) as (gw_url, token),
    ):
        workspace = serving_small_file(Path(tmp))
        with (
            node_process(gw_url, token, NODE_ID, workspace, Path(tmp) / "home"),
            server_process("floor-node", floor_url, str(workspace)),
        ):
            # interleaved blocks, so a burst of noise on a shared machine hits all three alike
            for _ in range(rounds):
                echo += asyncio.run(echo_rtts(echo_url, block))
                relay += asyncio.run(relay_rtts(relay_url, block))
                separate += asyncio.run(separate_relay_rtts(relay_url, block))
                floor += asyncio.run(floor_rtts(floor_url, block))
                samples += asyncio.run(invoke_rtts(gw_url, token, block))
    print(
        f"{len(samples)} sequential calls in {rounds} rounds, 127.0.0.1, servers on {loop_name()}"
    )
    print(summary("raw websockets echo", echo))
    print(summary("raw two-hop relay (floor)", relay, percentile(echo, 0.5)))
    print(summary("relay, peer in own process", separate, percentile(echo, 0.5)))
    print(summary("protocol floor, tool.invoke", floor, percentile(echo, 0.5)))
    print(summary("tool.invoke Read (node)", samples, percentile(echo, 0.5)))
    p50 = percentile(samples, 0.5)
    print(
        f"tool.invoke p50 / two-hop relay floor {p50 / percentile(relay, 0.5):.2f}x, "
        f"/ relay with its peer in its own process {p50 / percentile(separate, 0.5):.2f}x, "
        f"/ protocol floor {p50 / percentile(floor, 0.5):.2f}x"
    )
    print(
        f"protocol floor p50 / two-hop relay floor "
        f"{percentile(floor, 0.5) / percentile(relay, 0.5):.2f}x"
    )


if __name__ == "__main__":
    main()
