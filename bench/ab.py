"""A/B of the node tool round trip: this working tree against a git revision, measured
side by side in one run, so a change of a few percent shows through a noisy machine.

    python -m bench.ab [REV] [--rounds 12] [--block 400]

REV (default HEAD) is checked out into a temporary git worktree. Each side gets its own
gateway and `gsv node run` process started from its own tree; blocks of `tool.invoke`
of Read alternate between the two, and the median of the per-round p50 ratios is the
answer (below 1.0: the working tree is faster). The client is this tree's in both.
On the 2-core CI VM two identical trees read within about 4% of 1.0, at 12 rounds and
still at 40 (0.965-1.006): smaller differences show only over repeated runs.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench._servers import MeteredGateway
from bench._servers import gateway_process
from bench._servers import metered_gateway
from bench._servers import node_process
from bench.rpc_latency import percentile
from bench.tool_roundtrip import NODE_ID
from bench.tool_roundtrip import invoke_rtts
from bench.tool_roundtrip import serving_small_file
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import fake_llm_server

HERE = Path(__file__).resolve().parent.parent


@contextmanager
def worktree(rev: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(HERE), "worktree", "add", "-q", "--detach",
                        str(path), rev], check=True)  # fmt: skip
        try:
            yield path
        finally:
            subprocess.run(["git", "-C", str(HERE), "worktree", "remove", "--force",
                            str(path)], check=False)  # fmt: skip


@contextmanager
def metered_pair(rev: str) -> Iterator[tuple[FakeLLMServer, MeteredGateway, MeteredGateway]]:
    """One instant fake LLM, this tree's metered gateway and REV's (checked out into a
    temporary worktree), each with a data directory of its own: (llm, mine, theirs)."""
    with (
        fake_llm_server() as llm,
        tempfile.TemporaryDirectory() as mine_dir,
        tempfile.TemporaryDirectory() as theirs_dir,
        worktree(rev) as tree,
        metered_gateway(mine_dir) as mine,
        metered_gateway(theirs_dir, tree) as theirs,
    ):
        yield llm, mine, theirs


@contextmanager
def gateway_and_node(tree: Path) -> Iterator[tuple[str, str]]:
    """A gateway and a node serving a small file, both running `tree`'s code: yields
    (url, owner token)."""
    with tempfile.TemporaryDirectory() as tmp, gateway_process(tmp, tree=tree) as (url, token):
        workspace = serving_small_file(Path(tmp))
        with node_process(url, token, NODE_ID, workspace, Path(tmp) / "home", tree=tree):
            yield url, token


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", nargs="?", default="HEAD")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--block", type=int, default=400, help="calls per side per round")
    args = parser.parse_args(argv)
    rounds, block = max(2, min(args.rounds, 40)), max(50, min(args.block, 5000))
    with worktree(args.rev) as base, gateway_and_node(base) as a, gateway_and_node(HERE) as b:
        asyncio.run(invoke_rtts(*a, 100))  # warm up (and wait for the nodes)
        asyncio.run(invoke_rtts(*b, 100))
        p50_a: list[float] = []
        p50_b: list[float] = []
        for turn in range(rounds):
            # alternate which side goes first, so neither always follows the other
            for side, p50 in ((a, p50_a), (b, p50_b))[:: 1 if turn % 2 else -1]:
                p50.append(percentile(asyncio.run(invoke_rtts(*side, block)), 0.5))
    print(f"{rounds} rounds of {block} tool.invoke calls per side, 127.0.0.1")
    print(f"{args.rev:>14} p50 us: " + " ".join(f"{x * 1e6:5.0f}" for x in p50_a))
    print(f"{'working tree':>14} p50 us: " + " ".join(f"{x * 1e6:5.0f}" for x in p50_b))
    ratio = statistics.median(b / a for a, b in zip(p50_a, p50_b, strict=True))
    print(f"median p50 ratio working tree / {args.rev}: {ratio:.3f}")


if __name__ == "__main__":
    main()
