"""scripts/under_load.py: the load it makes ends with the command, and the command's exit
code is its own (the loaded runs of issue 40.6 rely on both)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "under_load.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120
    )


def test_the_command_runs_under_load_and_its_exit_code_is_kept() -> None:
    probe = "import sys; print('ran'); sys.exit(3)"
    done = run("--workers", "1", "--max-minutes", "1", "--", sys.executable, "-c", probe)
    assert done.returncode == 3
    assert "ran" in done.stdout
    assert "under load (1 busy workers): exit 3" in done.stdout


def test_no_command_or_a_bad_bound_is_refused() -> None:
    assert "name the command to run" in run("--workers", "1").stderr
    refused = run("--workers", "0", "--", sys.executable, "-c", "pass")
    assert refused.returncode == 2 and "--workers must be at least 1" in refused.stderr
