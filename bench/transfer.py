"""Transfer throughput: a 200 MB file node to node and node to workspace, beside the raw
websockets binary throughput (256 KiB frames into a sink) measured in the same run.
Also printed: how fast this machine writes (and fsyncs) 200 MB to a new file, which every
transfer's destination must do and the raw sink does not.

    python -m bench.transfer [--mb 200]

Gateway, nodes and the sink run in their own processes on 127.0.0.1. Target:
at least 40% of the raw throughput.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from bench._servers import gateway_process
from bench._servers import loop_name
from bench._servers import node_process
from bench._servers import raw_socket
from bench._servers import server_process

CHUNK = 256 * 1024


async def raw_throughput(url: str, size: int) -> float:
    payload = os.urandom(CHUNK)
    async with raw_socket(url) as ws:
        start = time.perf_counter()
        sent = 0
        while sent < size:
            await ws.send(payload)  # type: ignore[attr-defined]
            sent += CHUNK
        await ws.send("count")  # type: ignore[attr-defined]
        received = int(await ws.recv())  # type: ignore[attr-defined]
        elapsed = time.perf_counter() - start
    assert received == sent
    return sent / elapsed


async def transfer_throughput(
    url: str, token: str, source: str, destination: str, size: int
) -> float:
    from gsv_core.client import GatewayClient

    async with GatewayClient(url, token=token) as client:
        for _ in range(500):  # bounded wait for both nodes
            ids = {n["nodeId"] for n in (await client.call("nodes.list"))["nodes"] if n["online"]}
            if {"a", "b"} <= ids:
                break
            await asyncio.sleep(0.02)
        start = time.perf_counter()
        params = {"source": source, "destination": destination}
        result = await client.call("transfer.request", params, timeout=600)
        elapsed = time.perf_counter() - start
    assert result["bytesTransferred"] == size
    return size / elapsed


def disk_write_throughput(folder: Path, size: int) -> float:
    """Write `size` bytes to a new file in 256 KiB chunks, fsync, delete: bytes/second."""
    payload = os.urandom(CHUNK)
    path = folder / "disk-probe.bin"
    start = time.perf_counter()
    with path.open("wb") as fh:
        for _ in range(size // CHUNK):
            fh.write(payload)
        fh.flush()
        os.fsync(fh.fileno())
    elapsed = time.perf_counter() - start
    path.unlink()
    return (size // CHUNK) * CHUNK / elapsed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3, help="measurements of each (median)")
    args = parser.parse_args(argv)
    megabytes = max(1, min(args.mb, 2000))
    rounds = max(1, min(args.rounds, 10))
    size = megabytes * 1024 * 1024
    raw: list[float] = []
    n2n: list[float] = []
    n2w: list[float] = []
    disk: list[float] = []
    with (
        server_process("sink") as sink_url,
        tempfile.TemporaryDirectory() as tmp,
        gateway_process(tmp) as (url, token),
    ):
        root = Path(tmp)
        with (
            node_process(url, token, "a", root / "a", root / "home-a"),
            node_process(url, token, "b", root / "b", root / "home-b"),
        ):
            with (root / "a" / "big.bin").open("wb") as fh:
                block = os.urandom(1024 * 1024)
                for _ in range(megabytes):
                    fh.write(block)
            # interleaved, so a burst of noise on a shared machine hits every figure alike
            for _ in range(rounds):
                raw.append(asyncio.run(raw_throughput(sink_url, size)))
                disk.append(disk_write_throughput(root, size))
                n2n.append(
                    asyncio.run(transfer_throughput(url, token, "a:big.bin", "b:big.bin", size))
                )
                n2w.append(
                    asyncio.run(
                        transfer_throughput(url, token, "a:big.bin", "gsv:workspace/big.bin", size)
                    )
                )
    base = statistics.median(raw)
    print(f"{megabytes} MB, 127.0.0.1, servers on {loop_name()}, median of {rounds} rounds")
    print(f"raw websockets binary       {base / 1e6:8.1f} MB/s")
    print(f"disk write + fsync (no net)  {statistics.median(disk) / 1e6:8.1f} MB/s")
    for label, figures in (("node -> node", n2n), ("node -> workspace", n2w)):
        middle = statistics.median(figures)
        print(f"{label:<27} {middle / 1e6:8.1f} MB/s  ({middle / base:.0%} of raw)")


if __name__ == "__main__":
    main()
