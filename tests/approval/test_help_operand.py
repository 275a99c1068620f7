"""`PROGRAM --help` and `PROGRAM --version` run unasked, except where the word may be
read as a file to run: zsh's `source --help` runs a file named `--help` in the current
directory, which a Write in the workspace can make without asking."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gsv_core.approval.policy import ApprovalPolicy
from gsv_core.approval.policy import CallFacts
from gsv_core.approval.protected import protected_files
from gsv_core.paths import resolve_paths


def decide(line: str, workspace: Path) -> str:
    paths = resolve_paths()
    policy = ApprovalPolicy.from_config({}, protected_files(paths, paths.database, set()))
    facts = CallFacts("n1__Bash", "Bash", "n1", {"command": line}, str(workspace))
    return policy.decide(facts).verdict


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_runs_a_file_named_help_so_source_help_asks(tmp_path: Path) -> None:
    """For real: zsh's `source --help` runs ./--help. The policy asks for it, for `.`
    and `eval` too."""
    canary = tmp_path / "ran"
    (tmp_path / "--help").write_text(f"touch {canary}\n")
    subprocess.run(["zsh", "-fc", "source --help"], cwd=tmp_path, capture_output=True, timeout=30)
    assert canary.exists()  # the danger is real
    for line in ("source --help", ". --help", "eval --help", "exec --help", "command --help",
                 "noglob --help"):  # fmt: skip
        assert decide(line, tmp_path) == "ask", line


@pytest.mark.parametrize("shell", ["bash", "zsh", "dash", "python3"])
def test_shells_and_interpreters_read_help_as_an_option(tmp_path: Path, shell: str) -> None:
    """For real: `SHELL --help` / `--version` never runs a file of that name."""
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    canary = tmp_path / "ran"
    for word in ("--help", "--version"):
        (tmp_path / word).write_text(f"touch {canary}\n")
        subprocess.run([shell, word], cwd=tmp_path, capture_output=True, timeout=30,
                       stdin=subprocess.DEVNULL)  # fmt: skip
    assert not canary.exists()


def test_ordinary_programs_still_print_their_help_unasked(tmp_path: Path) -> None:
    for line in ("ls --help", "git --version", "python3 --version", "bash --version"):
        assert decide(line, tmp_path) == "allow", line
