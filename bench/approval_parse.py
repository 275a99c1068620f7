"""Approval decisions on huge shell lines: linear time, bounded size, and a
gateway that keeps answering while it judges.

    python -m bench.approval_parse [-r 5]

For a 1 MB and a 3 MB line of short words (the worst case for a per-word reader):
- the decision with the default `maxCommandBytes` (64 kB: the line asks "too long to
  read" without being read), on the gateway's policy and on a node's guard;
- the shell reader itself reading the whole line (what a raised limit costs), and the
  same for a line a tenth and a hundredth the size, to show the time grows linearly;
- a real gateway judging the 3 MB line with the limit raised to 4 MiB while a client
  calls `config.get` in a loop: the slowest `config.get` answer during the judging,
  against the slowest before it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gsv_core.approval.policy import ApprovalPolicy
from gsv_core.approval.policy import CallFacts
from gsv_core.approval.protected import Protected
from gsv_core.approval.shell import parse_script
from gsv_core.errors import ToolFailed

MB = 1 << 20


def big_line(size: int) -> str:
    return ("cat " + "ab " * (size // 3))[:size]


def timed(work: Callable[[], Any], runs: int) -> list[float]:
    work()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        samples.append(time.perf_counter() - start)
    return samples


def show(name: str, samples: list[float]) -> None:
    print(f"{name:<52} median {statistics.median(samples) * 1e3:9.2f} ms   "
          f"min {min(samples) * 1e3:9.2f} ms")  # fmt: skip


def decisions(runs: int) -> None:
    policy = ApprovalPolicy.from_config({}, Protected())
    for size in (MB, 3 * MB):
        facts = CallFacts("n__Bash", "Bash", "n", {"command": big_line(size)}, "/w")
        show(
            f"decide {size // MB} MB line (default limit)",
            timed(lambda f=facts: policy.decide(f), runs),
        )


def guard(runs: int) -> None:
    from gsv_core.node.guard import NodeGuard

    with tempfile.TemporaryDirectory() as root:
        node = NodeGuard("n", root, key="k" * 64)
        for size in (MB, 3 * MB):
            args = {"command": big_line(size)}

            def check(a: dict[str, Any] = args) -> None:
                # refused (no binding: what a gateway that skipped asking would get)
                with contextlib.suppress(ToolFailed):
                    node.check("Bash", a, None)

            show(f"node guard, {size // MB} MB line (default limit)", timed(check, runs))


def reading(runs: int) -> None:
    for size in (3 * MB // 100, 3 * MB // 10, MB, 3 * MB):
        line = big_line(size)
        samples = timed(lambda text=line: parse_script(text), max(1, runs // 2))
        per_mb = statistics.median(samples) / (size / MB)
        show(f"read the whole line, {size / MB:.2f} MB ({per_mb * 1e3:.0f} ms/MB)", samples)


async def responsiveness() -> None:
    from gsv_core.client import GatewayClient
    from gsv_core.gateway.server import ServerConfig
    from gsv_core.gateway.server import serve
    from gsv_core.gateway.tool_router import GatewayToolRouter

    with tempfile.TemporaryDirectory() as root:
        # the gateway keeps its owner token in GSV_HOME's store: a throwaway one, never yours
        os.environ["GSV_HOME"] = root
        os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
        config = ServerConfig(database=Path(root) / "gsv.db")
        async with serve(config, port=0) as gw, GatewayClient(gw.url, token=gw.token) as client:
            limit = {"path": "toolApproval.maxCommandBytes", "value": 4 * MB}
            await client.call("config.set", limit)
            gateway = gw.gateway
            router = GatewayToolRouter(gateway, gateway.native_tools, gateway.approvals)
            before = await _latencies(client, asyncio.sleep(0.5))
            judging = router.decide("n1__Bash", {"command": big_line(3 * MB)})
            started = time.perf_counter()
            during = await _latencies(client, judging)
            took = time.perf_counter() - started
    _latency_line("config.get while idle", before)
    _latency_line(f"config.get while a 3 MB line is judged ({took:.1f} s)", during)


def _latency_line(name: str, samples: list[float]) -> None:
    slowest, median = max(samples) * 1e3, statistics.median(samples) * 1e3
    print(f"{name:<52} {len(samples):6} calls, slowest {slowest:6.1f} ms, median {median:5.2f} ms")


async def _latencies(client: Any, work: Any) -> list[float]:
    task = asyncio.ensure_future(work)
    samples = []
    while not task.done():
        start = time.perf_counter()
        await client.call("config.get", {"path": "toolApproval.mode"})
        samples.append(time.perf_counter() - start)
    await task
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-r", "--runs", type=int, default=5)
    runs = parser.parse_args().runs
    logging.getLogger("gsv_core.node.guard").setLevel(logging.ERROR)  # each refusal warns
    decisions(runs)
    guard(runs)
    reading(runs)
    asyncio.run(responsiveness())


if __name__ == "__main__":
    main()
