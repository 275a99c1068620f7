"""How fast the CLI starts: `gsv --help`, each group's `--help` and shell completion (of
the first word in bash, zsh and fish, and inside a group), against
`python -c "import typer"` measured in the same run (the floor any typer CLI pays); then
every client command that reads from a gateway (a real one, started here), against that
floor plus one round trip: `import typer`, then a raw websockets connect and one call.

    python -m bench.cli_startup [-n RUNS]

Prints the median wall time of each command and its ratio to its baseline (runs
interleaved, so a machine that slows down slows both), and flags a ratio over 3x (the
target of issue 40.9). Bounded: at most 50 runs each.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

GROUPS = ["sessions", "cron", "nodes", "config", "security", "status", "doctor"]
# the client commands that read from the gateway (one call, or a few)
CLIENT = [["status"], ["sessions", "list"], ["cron", "list"], ["cron", "runs"],
          ["nodes", "list"], ["config", "get", "model"], ["tools", "list"], ["mcp", "list"],
          ["approvals", "list"], ["approvals", "rules"], ["pairing", "list"],
          ["channels", "list"], ["skills", "list"], ["usage"], ["heartbeat", "status"],
          ["web", "list"], ["sessions", "get", "main"], ["workspace", "ls"]]  # fmt: skip
# a raw round trip, as a CLI command makes one (the client floor's second half)
ROUND_TRIP = """
import json, sys, typer
from websockets.sync.client import connect
with connect(sys.argv[1], proxy=None, compression=None) as ws:
    ws.send(json.dumps({"type": "req", "id": "1", "method": "connect", "params": {
        "minProtocol": 1, "maxProtocol": 1, "auth": {"token": sys.argv[2]},
        "client": {"id": "bench", "version": "0", "platform": "linux", "mode": "client"}}}))
    ws.recv()
"""


# completion requests as the scripts in completions/ make them: bash passes the words and
# the index of the one completed, zsh and fish the line so far
BASH, ZSH, FISH = ({"_GSV_COMPLETE": f"complete_{shell}"} for shell in ("bash", "zsh", "fish"))
COMPLETIONS = {
    "complete `gsv cr` (bash)": BASH | {"COMP_WORDS": "gsv cr", "COMP_CWORD": "1"},
    "complete `gsv cr` (zsh)": ZSH | {"_TYPER_COMPLETE_ARGS": "gsv cr"},
    "complete `gsv cr` (fish)": FISH
    | {"_TYPER_COMPLETE_ARGS": "gsv cr", "_TYPER_COMPLETE_FISH_ACTION": "get-args"},
    "complete `gsv cron a`": BASH | {"COMP_WORDS": "gsv cron a", "COMP_CWORD": "2"},
}


def wall(argv: list[str], env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                   env={**os.environ, **env} if env else None)  # fmt: skip
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--runs", type=int, default=10)
    runs = max(3, min(parser.parse_args(argv).runs, 50))
    baseline = [sys.executable, "-c", "import typer"]
    commands = {"gsv --help": ["--help"]} | {f"gsv {g} --help": [g, "--help"] for g in GROUPS}
    timings: dict[str, list[float]] = {name: [] for name in [*commands, *COMPLETIONS]}
    floor: list[float] = []
    gsv = [sys.executable, "-m", "gsv_cli"]
    for _ in range(runs):
        for name, args in commands.items():
            floor.append(wall(baseline))
            timings[name].append(wall([*gsv, *args]))
        for name, request in COMPLETIONS.items():
            floor.append(wall(baseline))
            timings[name].append(wall(gsv, request))
    base = statistics.median(floor)
    print(f"{runs} runs each; baseline `python -c 'import typer'` median {base * 1e3:.0f} ms")
    for name, samples in timings.items():
        report(name, statistics.median(samples), base)
    clients(runs)


def report(name: str, median: float, base: float) -> None:
    flag = "  OVER 3x" if median / base > 3 else ""
    print(f"{name:<32} median {median * 1e3:6.0f} ms   {median / base:4.1f}x baseline{flag}")


def clients(runs: int) -> None:
    """The client commands against a real gateway, and their floor."""
    import tempfile

    from bench._servers import gateway_process

    with tempfile.TemporaryDirectory() as data, gateway_process(data) as (url, token):
        env = {"GSV_URL": url, "GSV_TOKEN": token, "GSV_HOME": data}
        gsv = [sys.executable, "-m", "gsv_cli"]
        floor: list[float] = []
        timings: dict[str, list[float]] = {" ".join(c): [] for c in CLIENT}
        for _ in range(runs):
            for command in CLIENT:
                floor.append(wall([sys.executable, "-c", ROUND_TRIP, url, token]))
                timings[" ".join(command)].append(wall([*gsv, *command], env))
        base = statistics.median(floor)
        print(f"client commands; baseline `import typer` + one round trip median "
              f"{base * 1e3:.0f} ms")  # fmt: skip
        for name, samples in timings.items():
            report(f"gsv {name}", statistics.median(samples), base)


if __name__ == "__main__":
    main()
