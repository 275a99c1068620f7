"""RPC latency: sequential `config.get` round trips against a raw websockets echo baseline.

    python -m bench.rpc_latency [-n 10000]

Both servers run in their own process on 127.0.0.1; the client runs here. Prints p50/p99
of the raw echo RTT, of `config.get` sent as raw frames, and of `config.get` through
GatewayClient, with the ratios to echo. Target: gateway p50 within 2x of echo.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from typing import Any

from bench._servers import gateway_process
from bench._servers import loop_name
from bench._servers import raw_socket
from bench._servers import server_process


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary(name: str, samples: list[float], baseline: float | None = None) -> str:
    p50, p99 = percentile(samples, 0.50), percentile(samples, 0.99)
    ratio = f"  p50 ratio to echo {p50 / baseline:.2f}x" if baseline else ""
    return (
        f"{name:<28} p50 {p50 * 1e6:8.1f} us   p99 {p99 * 1e6:8.1f} us   "
        f"mean {statistics.fmean(samples) * 1e6:8.1f} us{ratio}"
    )


# what the echo server is sent: a config.get request's frame (bench/floors.py too)
ECHO_FRAME = json.dumps({"type": "req", "id": "x", "method": "config.get", "params": {}})


async def echo_rtts(url: str, count: int, frame: str = ECHO_FRAME) -> list[float]:
    """`count` sequential round trips of `frame` on one raw connection (seconds each)."""
    samples = []
    async with raw_socket(url) as ws:
        for _ in range(count):
            start = time.perf_counter()
            await ws.send(frame)  # type: ignore[attr-defined]
            await ws.recv()  # type: ignore[attr-defined]
            samples.append(time.perf_counter() - start)
    return samples


async def raw_gateway_rtts(url: str, token: str, count: int) -> list[float]:
    connect = {
        "type": "req",
        "id": "c",
        "method": "connect",
        "params": {
            "minProtocol": 1,
            "maxProtocol": 1,
            "client": {
                "id": "bench-raw",
                "version": "bench",
                "platform": "linux",
                "mode": "client",
            },
            "auth": {"token": token},
        },
    }
    samples = []
    async with raw_socket(url) as ws:
        await ws.send(json.dumps(connect))  # type: ignore[attr-defined]
        assert json.loads(await ws.recv())["ok"]  # type: ignore[attr-defined]
        for i in range(count):
            frame = json.dumps(
                {"type": "req", "id": str(i), "method": "config.get", "params": {"path": "model"}}
            )
            start = time.perf_counter()
            await ws.send(frame)  # type: ignore[attr-defined]
            reply = await ws.recv()  # type: ignore[attr-defined]
            samples.append(time.perf_counter() - start)
        assert json.loads(reply)["ok"]
    return samples


async def client_rtts(url: str, token: str, count: int) -> list[float]:
    from gsv_core.client import GatewayClient

    samples = []
    async with GatewayClient(url, token=token) as client:
        for _ in range(count):
            start = time.perf_counter()
            await client.call("config.get", {"path": "model"})
            samples.append(time.perf_counter() - start)
    return samples


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--count", type=int, default=10_000)
    args = parser.parse_args(argv)
    count = max(10, min(args.count, 100_000))  # bounded: the loop always ends
    with server_process("echo") as echo_url:
        echo = asyncio.run(echo_rtts(echo_url, count))
    with tempfile.TemporaryDirectory() as data, gateway_process(data) as (gw_url, token):
        raw = asyncio.run(raw_gateway_rtts(gw_url, token, count))
        via_client = asyncio.run(client_rtts(gw_url, token, count))
    base = percentile(echo, 0.5)
    print(f"{count} sequential round trips on one connection, 127.0.0.1, servers on {loop_name()}")
    print(summary("raw websockets echo", echo))
    print(summary("gateway config.get (raw)", raw, base))
    print(summary("gateway config.get (client)", via_client, base))
    return {
        "echo_p50": base,
        "raw_p50": percentile(raw, 0.5),
        "client_p50": percentile(via_client, 0.5),
    }


if __name__ == "__main__":
    main()
