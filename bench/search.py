"""Node search tools: Glob and Grep over a generated tree, Python path against ripgrep.

    python -m bench.search [-n 50000] [-r 5]

Generates N small text files (bounded to 1,000..200,000) in a temp dir, 100 per
directory, two levels deep, then times through the real tools (Toolset.invoke):
- Glob `**/*.py` (always the Python walk), with `rg --files --glob *.py` as a reference;
- Grep of a rare literal (Python skips files by a byte search), a rare regex (every file
  decoded and searched) and a common regex (stops at the 100-match cap), each with the
  Python backend and the rg backend.
Prints the median and min of R runs after one warm-up run, and the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Awaitable
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from gsv_core.node.tools import build_toolset

FILES_PER_DIR = 100
EXTENSIONS = (".py", ".md", ".txt", ".rs")


def generate(root: Path, count: int) -> int:
    """Write `count` small files; every 997th holds the rare needle. Returns directories made."""
    dirs = 0
    for index in range(count):
        if index % FILES_PER_DIR == 0:
            folder = root / f"d{index // 10_000:02}" / f"s{index // FILES_PER_DIR:04}"
            folder.mkdir(parents=True)
            dirs += 1
        needle = "zebra_needle here\n" if index % 997 == 0 else ""
        body = f"# file {index}\ndef f_{index}(x):\n    return x + {index}\n{needle}common word\n"
        (folder / f"f{index:06}{EXTENSIONS[index % len(EXTENSIONS)]}").write_text(body)
    return dirs


async def timed(work: Callable[[], Awaitable[Any]], runs: int) -> tuple[list[float], Any]:
    result = await work()  # warm-up: page cache, imports
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        result = await work()
        samples.append(time.perf_counter() - start)
    return samples, result


def line(name: str, samples: list[float], note: str = "") -> str:
    return (
        f"{name:<34} median {statistics.median(samples) * 1e3:8.1f} ms   "
        f"min {min(samples) * 1e3:8.1f} ms{note}"
    )


def ratio(slow: list[float], fast: list[float], label: str) -> str:
    return f"   {label} {statistics.median(slow) / statistics.median(fast):.2f}x"


async def measure(root: Path, runs: int) -> dict[str, float]:
    python = build_toolset(root, use_rg=False)
    rg = shutil.which("rg")
    figures: dict[str, float] = {}
    glob_samples, glob = await timed(lambda: python.invoke("Glob", {"pattern": "**/*.py"}), runs)
    print(line("Glob **/*.py (python walk)", glob_samples, f"   {_size(glob)}"))
    figures["glob_python"] = statistics.median(glob_samples)
    if rg:
        command = [
            rg,
            "--files",
            "--no-config",
            "--hidden",
            "--no-ignore",
            "--glob",
            "*.py",
            str(root),
        ]

        async def rg_files() -> int:
            done = await asyncio.to_thread(subprocess.run, command, capture_output=True, check=True)
            return done.stdout.count(b"\n")

        files_samples, listed = await timed(rg_files, runs)
        print(line("rg --files --glob *.py (reference)", files_samples, f"   {listed} files"
                   + ratio(glob_samples, files_samples, "python/rg")))  # fmt: skip
        figures["glob_rg_reference"] = statistics.median(files_samples)
    with_rg = build_toolset(root, use_rg=True) if rg else None
    searches = (
        ("rare literal", "zebra_needle"),
        ("rare regex", r"zebra_\w+"),
        ("common regex", r"common\s+word"),
    )
    for label, pattern in searches:
        args = {"pattern": pattern}
        py_samples, py_result = await timed(partial(python.invoke, "Grep", args), runs)
        print(line(f"Grep {label} (python)", py_samples, f"   {_size(py_result)}"))
        figures[f"grep_{label}_python"] = statistics.median(py_samples)
        if with_rg is not None:
            rg_samples, rg_result = await timed(partial(with_rg.invoke, "Grep", args), runs)
            assert rg_result == py_result, "backends disagree"
            note = f"   {_size(rg_result)}" + ratio(py_samples, rg_samples, "python/rg")
            print(line(f"Grep {label} (rg backend)", rg_samples, note))
            figures[f"grep_{label}_rg"] = statistics.median(rg_samples)
    if not rg:
        print("rg not on PATH: ripgrep figures skipped")
    await python.close()
    if with_rg is not None:
        await with_rg.close()
    return figures


def _size(result: dict[str, Any]) -> str:
    more = "+ (truncated)" if result.get("truncated") else ""
    return f"{len(result['matches'])}{more} matches"


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("-n", "--files", type=int, default=50_000)
    parser.add_argument("-r", "--runs", type=int, default=5)
    args = parser.parse_args(argv)
    count = max(1_000, min(args.files, 200_000))  # bounded: the tree always fits a temp dir
    runs = max(1, min(args.runs, 50))
    with tempfile.TemporaryDirectory(prefix="gsv-bench-search-") as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        dirs = generate(root, count)
        print(
            f"{count} files in {dirs} directories, generated in "
            f"{time.perf_counter() - start:.1f} s; {runs} runs after a warm-up"
        )
        return asyncio.run(measure(root, runs))


if __name__ == "__main__":
    main()
