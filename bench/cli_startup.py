"""How fast the CLI starts: `gsv --help`, each group's `--help` and shell completion (of
the first word, and inside a group), against
`python -c "import typer"` measured in the same run (the floor any typer CLI pays).

    python -m bench.cli_startup [-n RUNS]

Prints the median wall time of each command and its ratio to the baseline (runs
interleaved, so a machine that slows down slows both). Bounded: at most 50 runs each.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

GROUPS = ["sessions", "cron", "nodes", "config", "security", "status", "doctor"]


# bash completion as its script asks: the line so far and the index of the word completed
COMPLETIONS = {"complete `gsv cr`": ("gsv cr", "1"), "complete `gsv cron a`": ("gsv cron a", "2")}


def wall(argv: list[str], env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                   env={**os.environ, **env} if env else None)  # fmt: skip
    return time.perf_counter() - started


def completing(line: str, word: str) -> dict[str, str]:
    return {"_GSV_COMPLETE": "complete_bash", "COMP_WORDS": line, "COMP_CWORD": word}


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
        for name, (line, word) in COMPLETIONS.items():
            floor.append(wall(baseline))
            timings[name].append(wall(gsv, completing(line, word)))
    base = statistics.median(floor)
    print(f"{runs} runs each; baseline `python -c 'import typer'` median {base * 1e3:.0f} ms")
    for name, samples in timings.items():
        median = statistics.median(samples)
        print(f"{name:<26} median {median * 1e3:6.0f} ms   {median / base:4.1f}x baseline")


if __name__ == "__main__":
    main()
