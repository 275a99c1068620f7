"""Run a command while every core is kept busy, as a shared CI machine is.

    python scripts/under_load.py [--workers N] [--max-minutes M] -- scripts/check

The suite must not depend on the machine's speed (issue 40.6): this is how it is tried.
One busy-looping process per core (or --workers) runs beside the command; they stop when
the command ends, or after --max-minutes at the latest, so the load never outlives a run
that hangs. The command's exit code is this script's.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import time


def _spin(until: float) -> None:
    """Burn one core until the monotonic clock passes `until`."""
    n = 0
    while time.monotonic() < until:
        for _ in range(100_000):
            n = (n * 31 + 7) % 1_000_003


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--max-minutes", type=float, default=90.0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("name the command to run, after --")
    if args.workers < 1 or args.max_minutes <= 0:
        parser.error("--workers must be at least 1 and --max-minutes above 0")
    until = time.monotonic() + args.max_minutes * 60
    burners = [multiprocessing.Process(target=_spin, args=(until,)) for _ in range(args.workers)]
    for burner in burners:
        burner.start()
    started = time.monotonic()
    try:
        code = subprocess.call(command)
    finally:
        for burner in burners:
            burner.terminate()
            burner.join()
    minutes = (time.monotonic() - started) / 60
    print(f"under load ({args.workers} busy workers): exit {code} after {minutes:.1f} min")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
