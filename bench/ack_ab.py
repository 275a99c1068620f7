"""A/B of a crowd's acks: this working tree against a git revision, burst for burst in one
run, so a change shows through a noisy machine (one `bench.crowd` run does not: its ack
p99 moves by a fifth between runs of the same tree).

    python -m bench.ack_ab [REV] [--rounds 10] [-n 100]

REV (default HEAD) is checked out into a temporary git worktree. Each side gets its own
metered gateway (bench/_servers.py, started from its own tree) answered by the same
instant fake LLM, and `-n` connections of its own, each `chat.subscribe`d to the session
it sends to. A round is one burst per side, in alternating order: every connection sends
one `chat.send` to a new session at the same moment. Per burst: the last-but-one ack (the
p99 of 100) and the gateway's CPU per ack (its own process, every thread, from before the
first send to the last ack); then the runs finish before the next burst. Printed: each
side's medians and the median of the per-round ratios (below 1.0: the working tree is
faster). The clients are this tree's in both. Two identical trees read 0.97-1.05 over 10
and 12 rounds, single rounds 0.77-1.9: only a change beyond that shows.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from contextlib import AsyncExitStack
from typing import Any

from bench._servers import MeteredGateway
from bench.ab import metered_pair
from bench.turn_profile import use_fake_llm
from tests.fakes.llm_server import FakeLLMServer

BURST_TIMEOUT = 60.0  # seconds for a burst's acks, and again for its runs to end
PAUSE = 1.0  # seconds between bursts


class _Side:
    """One gateway and its crowd of connections."""

    def __init__(self, gateway: MeteredGateway, name: str) -> None:
        self.gateway = gateway
        self.name = name
        self.clients: list[Any] = []
        self.finals: dict[str, asyncio.Future[None]] = {}
        self.p99: list[float] = []
        self.cpu: list[float] = []

    def _on_event(self, frame: Any) -> None:
        payload = frame.payload if isinstance(frame.payload, dict) else {}
        waiter = self.finals.get(str(payload.get("runId")))
        if payload.get("state") in ("final", "error", "aborted") and waiter and not waiter.done():
            waiter.set_result(None)

    async def open(self, stack: AsyncExitStack, llm: FakeLLMServer, count: int) -> None:
        from gsv_core.client import GatewayClient

        url, token = self.gateway.url, self.gateway.token
        admin = await stack.enter_async_context(GatewayClient(url, token=token))
        await use_fake_llm(admin, llm)
        for _ in range(count):
            client = GatewayClient(url, token=token, on_event=self._on_event)
            self.clients.append(await stack.enter_async_context(client))
        await self.burst("warm-up")  # the SDK imported, the reader threads started

    async def burst(self, tag: str) -> tuple[float, float]:
        """One burst of new sessions: (last-but-one ack in seconds, CPU seconds per ack)."""
        keys = [f"{self.name}-{tag}-{i}" for i in range(len(self.clients))]
        loop = asyncio.get_running_loop()
        self.finals = {key: loop.create_future() for key in keys}
        await asyncio.gather(*(c.call("chat.subscribe", {"sessionKeys": [key]})
                               for c, key in zip(self.clients, keys, strict=True)))  # fmt: skip
        acks: list[float] = []
        cpu = self.gateway.cpu()
        start = time.perf_counter()

        async def send(client: Any, key: str) -> None:
            params = {"sessionKey": key, "message": "hi", "runId": key}
            await client.call("chat.send", params, timeout=BURST_TIMEOUT)
            acks.append(time.perf_counter() - start)

        await asyncio.gather(*(send(c, k) for c, k in zip(self.clients, keys, strict=True)))
        per_ack = (self.gateway.cpu() - cpu) / len(keys)
        await asyncio.wait_for(asyncio.gather(*self.finals.values()), BURST_TIMEOUT)
        acks.sort()
        return acks[max(0, len(acks) - 2)], per_ack


async def compare(mine: MeteredGateway, theirs: MeteredGateway, llm: FakeLLMServer,
                  rounds: int, count: int) -> tuple[list[float], list[float]]:  # fmt: skip
    """Per round, the working tree's ack p99 and CPU per ack over the revision's."""
    sides = _Side(mine, "mine"), _Side(theirs, "theirs")
    async with AsyncExitStack() as stack:
        for side in sides:
            await side.open(stack, llm, count)
        for round_ in range(rounds):
            for side in sides if round_ % 2 == 0 else reversed(sides):
                # the last burst's catch-up writes (its messages indexed once writes pause
                # 0.25 s, memory/index.py) are done, not counted in this burst
                await asyncio.sleep(PAUSE)
                p99, cpu = await side.burst(f"r{round_}")
                side.p99.append(p99)
                side.cpu.append(cpu)
    for side, label in zip(sides, ("working tree", "revision"), strict=True):
        print(f"{label:<13} ack p99 {statistics.median(side.p99) * 1e3:7.1f} ms   "
              f"CPU per ack {statistics.median(side.cpu) * 1e3:6.3f} ms")  # fmt: skip
    p99s = [a / b for a, b in zip(sides[0].p99, sides[1].p99, strict=True)]
    cpus = [a / b for a, b in zip(sides[0].cpu, sides[1].cpu, strict=True)]
    return p99s, cpus


def main(argv: list[str] | None = None) -> tuple[float, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", nargs="?", default="HEAD")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("-n", "--count", type=int, default=100, help="chats at once (2-500)")
    args = parser.parse_args(argv)
    rounds = max(1, min(args.rounds, 50))  # bounded: the loop always ends
    count = max(2, min(args.count, 500))
    with metered_pair(args.rev) as (llm, mine, theirs):
        p99s, cpus = asyncio.run(compare(mine, theirs, llm, rounds, count))
    print(f"per-round ack p99 ratios {' '.join(f'{r:.2f}' for r in p99s)}")
    print(f"per-round CPU ratios     {' '.join(f'{r:.2f}' for r in cpus)}")
    p99, cpu = statistics.median(p99s), statistics.median(cpus)
    print(f"median ratio (working tree / {args.rev}): ack p99 {p99:.3f}, CPU per ack {cpu:.3f}")
    return p99, cpu


if __name__ == "__main__":
    main()
