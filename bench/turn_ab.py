"""A/B of a turn's gateway CPU: this working tree against a git revision, side by side in
one run, so a change of a few percent shows through a noisy machine.

    python -m bench.turn_ab [REV] [--rounds 12] [--block 10]

REV (default HEAD) is checked out into a temporary git worktree. Each side gets its own
metered gateway (bench/_servers.py, started from its own tree) answered by the same
instant fake LLM, with two more clients hearing every event, as `bench.turn_profile`
measures. Blocks of `--block` turns alternate between the two, each side's CPU per turn
taken from its own process (the cost of a CPU reading itself taken off), and the median of
the per-round ratios is the answer (below 1.0: the working tree costs less). The clients
are this tree's in both. Two identical trees read within a few percent of 1.0.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
from contextlib import AsyncExitStack
from typing import Any

from bench._servers import MeteredGateway
from bench.ab import metered_pair
from bench.turn_profile import WARM_UP
from bench.turn_profile import reading_cost
from bench.turn_profile import timed_turns
from bench.turn_profile import use_fake_llm
from tests.fakes.llm_server import FakeLLMServer

WATCHERS = 2


class _Side:
    """One gateway, its client and what a CPU reading costs it."""

    def __init__(self, gateway: MeteredGateway) -> None:
        self.gateway = gateway
        self.client: Any = None
        self.events: Any = None
        self.reading = 0.0
        self.per_turn: list[float] = []

    async def open(self, stack: AsyncExitStack, llm: FakeLLMServer) -> None:
        from gsv_core.client import GatewayClient

        url, token = self.gateway.url, self.gateway.token
        self.client = await stack.enter_async_context(GatewayClient(url, token=token))
        for _ in range(WATCHERS):
            await stack.enter_async_context(GatewayClient(url, token=token))
        await use_fake_llm(self.client, llm)
        self.events = self.client.events()
        await self.block(llm, "warm-up", WARM_UP)
        self.reading = reading_cost(self.gateway.cpu)

    async def block(self, llm: FakeLLMServer, key: str, count: int) -> float:
        """Mean gateway CPU per turn over `count` turns in session `key`."""
        turns = await timed_turns(self.client, self.events, llm, key, count, self.gateway.cpu)
        return statistics.fmean(turns) - self.reading


async def compare(mine: MeteredGateway, theirs: MeteredGateway, llm: FakeLLMServer,
                  rounds: int, block: int) -> list[float]:  # fmt: skip
    """Per round, the working tree's CPU per turn over the revision's."""
    sides = _Side(mine), _Side(theirs)
    ratios: list[float] = []
    async with AsyncExitStack() as stack:
        for side in sides:
            await side.open(stack, llm)
        for _ in range(rounds):
            a, b = [await side.block(llm, "bench-ab", block) for side in sides]
            sides[0].per_turn.append(a)
            sides[1].per_turn.append(b)
            ratios.append(a / b)
    print(f"CPU per turn, working tree  {statistics.median(sides[0].per_turn) * 1e3:8.2f} ms")
    print(f"CPU per turn, revision      {statistics.median(sides[1].per_turn) * 1e3:8.2f} ms")
    return ratios


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", nargs="?", default="HEAD")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--block", type=int, default=10)
    args = parser.parse_args(argv)
    rounds = max(1, min(args.rounds, 100))  # bounded: the loop always ends
    block = max(1, min(args.block, 100))
    with metered_pair(args.rev) as (llm, mine, theirs):
        ratios = asyncio.run(compare(mine, theirs, llm, rounds, block))
    median = statistics.median(ratios)
    print(f"per-round ratios {' '.join(f'{r:.2f}' for r in ratios)}")
    print(f"median ratio (working tree / {args.rev}) {median:.3f}")
    return median


if __name__ == "__main__":
    main()
