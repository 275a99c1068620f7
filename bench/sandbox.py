"""The node sandbox: the time it adds to a Bash call, and the questions it saves.

    python -m bench.sandbox [-n 200]

Time: `n` Bash calls of `true` through the node's own Bash tool (the shell, the process
group, output capture), alternately confined by bubblewrap and with full access, in one
run; printed are p50, p90 and p99 of each and the p50 the sandbox adds (target: under 15 ms)
with the ratio. The bare cost of `bwrap ... true` against `true` alone (subprocess.run) is
printed too. Needs a working bubblewrap (Linux). HOME is an empty directory during the run, so the
owner's login profile does not dominate both sides.

Questions: of the everyday lines of tests/approval/everyday_work.py (building, testing,
scripts, writes in the workspace, git, package managers), how many ask in allowlist mode
on a node without a sandbox and on a sandboxed one (`toolApproval.sandboxed: auto`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from gsv_core.approval.binding import FULL
from gsv_core.approval.binding import SANDBOX
from gsv_core.approval.policy import ApprovalPolicy
from gsv_core.approval.policy import CallFacts
from gsv_core.approval.protected import Protected
from gsv_core.node.sandbox import SandboxPolicy
from gsv_core.node.sandbox import choose_sandbox
from gsv_core.node.tools import build_toolset

TIME_LIMIT_SECONDS = 120.0


def quantiles(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return statistics.median(ordered), pick(0.9), pick(0.99)


async def bash_calls(workspace: Path, count: int) -> dict[str, list[float]]:
    sandbox = choose_sandbox("bwrap", SandboxPolicy(workspace=str(workspace)))
    tools = build_toolset(workspace, sandbox=sandbox)
    times: dict[str, list[float]] = {SANDBOX: [], FULL: []}
    deadline = time.monotonic() + TIME_LIMIT_SECONDS
    try:
        for i in range(count * 2):
            if time.monotonic() > deadline:
                break
            access = SANDBOX if i % 2 == 0 else FULL
            started = time.perf_counter()
            result = await tools.invoke("Bash", {"command": "true"}, access)
            times[access].append((time.perf_counter() - started) * 1000)
            assert result["status"] == "completed", result
    finally:
        await tools.close()
    return times


def bare_launches(workspace: Path, count: int) -> dict[str, list[float]]:
    sandbox = choose_sandbox("bwrap", SandboxPolicy(workspace=str(workspace)))
    argvs = {"bwrap true": sandbox.wrap(["true"], str(workspace)), "true": ["true"]}
    times: dict[str, list[float]] = {name: [] for name in argvs}
    for _ in range(count):
        for name, argv in argvs.items():
            started = time.perf_counter()
            subprocess.run(argv, check=True, cwd=workspace)
            times[name].append((time.perf_counter() - started) * 1000)
    return times


def questions() -> tuple[int, int, int]:
    from tests.approval.everyday_work import EVERYDAY_WORK

    judge = ApprovalPolicy.from_config({}, Protected())

    def asks(line: str, sandboxed: bool) -> bool:
        facts = CallFacts("n__Bash", "Bash", "n", {"command": line}, "/home/me/project",
                          sandboxed=sandboxed)  # fmt: skip
        return judge.decide(facts).verdict == "ask"

    lines = [line for line, _ in EVERYDAY_WORK]
    without = sum(asks(line, False) for line in lines)
    return len(lines), without, sum(asks(line, True) for line in lines)


def report(name: str, samples: list[float]) -> float:
    p50, p90, p99 = quantiles(samples)
    print(
        f"  {name:<22} p50 {p50:7.2f} ms  p90 {p90:7.2f} ms  p99 {p99:7.2f} ms  (n={len(samples)})"
    )
    return p50


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=200, help="calls of each kind")
    count = parser.parse_args().n
    with tempfile.TemporaryDirectory() as directory:
        workspace = Path(directory)
        # an empty home: the owner's login profile (pyenv's rehash, nvm) would dominate
        # both sides and is not what is measured
        os.environ["HOME"] = directory
        print("Bash `true` through the node's Bash tool:")
        calls = asyncio.run(bash_calls(workspace, count))
        confined, full = (
            report("confined (bwrap)", calls[SANDBOX]),
            report("full access", calls[FULL]),
        )
        print(f"  the sandbox adds p50 {confined - full:.2f} ms per call "
              f"(target under 15 ms); ratio {confined / full:.2f}x")  # fmt: skip
        print("Bare launches (subprocess.run):")
        bare = bare_launches(workspace, count)
        wrapped, plain = report("bwrap ... true", bare["bwrap true"]), report("true", bare["true"])
        print(f"  bwrap adds p50 {wrapped - plain:.2f} ms; ratio {wrapped / plain:.2f}x")
    total, without, within = questions()
    print(f"Everyday work ({total} lines, allowlist mode): {without} ask without a sandbox, "
          f"{within} with one (toolApproval.sandboxed: auto)")  # fmt: skip


if __name__ == "__main__":
    main()
