"""A process's environment and memory under /proc are gsv's secrets too: the gateway may
hold provider keys in its environment (a supported place for them), and `pgrep -af gsv`
tells its pid."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gsv_core.approval.policy import ApprovalPolicy
from gsv_core.approval.policy import CallFacts
from gsv_core.approval.protected import protected_files
from gsv_core.paths import resolve_paths

LINES = [
    "strings /proc/{pid}/environ",
    "cat /proc/{pid}/environ",
    "tr '\\0' '\\n' < /proc/{pid}/environ",
    "grep -ao 'API_KEY=[[:graph:]]*' /proc/*/environ",
    "cat /proc/self/environ",
    "strings /proc/{pid}/task/{pid}/environ",
    "dd if=/proc/{pid}/mem bs=1 count=1",
]


@pytest.mark.parametrize("mode", ["allowlist", "denylist", "off"])
def test_reading_a_process_environment_is_refused_in_every_mode(tmp_path: Path, mode: str) -> None:
    paths = resolve_paths()
    protected = protected_files(paths, paths.database, {os.getpid()})
    policy = ApprovalPolicy.from_config({"toolApproval": {"mode": mode}}, protected)
    for line in LINES:
        command = line.format(pid=os.getpid())
        facts = CallFacts("n1__Bash", "Bash", "n1", {"command": command}, str(tmp_path))
        assert policy.decide(facts).verdict == "deny", command


def test_the_danger_is_real(tmp_path: Path) -> None:
    """For real: a child's environment, key included, is one `strings` away."""
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-CANARY"}
    child = subprocess.Popen(["sleep", "30"], env=env)
    try:
        shown = subprocess.run(["strings", f"/proc/{child.pid}/environ"], capture_output=True,
                               text=True, timeout=30)  # fmt: skip
        assert "sk-ant-CANARY" in shown.stdout
    finally:
        child.kill()
        child.wait()
