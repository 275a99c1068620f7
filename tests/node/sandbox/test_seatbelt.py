"""The Seatbelt profile for macOS, read as text (sandbox-exec exists only on macOS; where
it does, the profile is also run for real): hidden paths unreadable, the workspace
writable but its .git, the network only when allowed, and a path cannot smuggle a rule."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from gsv_core.node.sandbox import SandboxPolicy
from gsv_core.node.sandbox.seatbelt import EXECUTABLE
from gsv_core.node.sandbox.seatbelt import SeatbeltSandbox
from gsv_core.node.sandbox.seatbelt import profile


def test_the_profile_denies_by_default_and_hides_what_it_must(tmp_path: Path) -> None:
    text = profile(SandboxPolicy(workspace=str(tmp_path), hidden=("/Users/me/.ssh",)))
    assert text.startswith("(version 1)\n(deny default)")
    assert f'(allow file-write* (subpath "{tmp_path.resolve()}")' in text
    assert f'(deny file-write* (subpath "{tmp_path.resolve()}/.git"))' in text
    assert '(deny file-read* file-write* (subpath "/Users/me/.ssh"))' in text
    assert "network" not in text.replace("sandbox", "")  # no network rule at all
    assert '(sysctl-name "kern.procargs2")' in text  # no other process's environment


def test_the_network_only_when_the_owner_allows_it(tmp_path: Path) -> None:
    text = profile(SandboxPolicy(workspace=str(tmp_path), network=True))
    assert "(allow network* system-socket)" in text


def test_a_path_cannot_end_its_string_and_add_a_rule(tmp_path: Path) -> None:
    """A workspace named `x") (allow default) ("` stays one string."""
    evil = str(tmp_path / 'x") (allow default) ("')
    text = profile(SandboxPolicy(workspace=evil))
    outside_strings = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)
    assert "(allow default)" not in outside_strings
    assert '\\") (allow default) (\\"' in text


def test_wrap_runs_the_command_under_sandbox_exec(tmp_path: Path) -> None:
    sandbox = SeatbeltSandbox(SandboxPolicy(workspace=str(tmp_path)))
    argv = sandbox.wrap(["/bin/bash", "-lc", "ls"], str(tmp_path))
    assert argv[:2] == [EXECUTABLE, "-p"] and argv[3:] == ["--", "/bin/bash", "-lc", "ls"]


@pytest.mark.skipif(not Path(EXECUTABLE).exists(), reason="sandbox-exec exists only on macOS")
def test_on_macos_a_write_outside_fails_and_inside_works(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    sandbox = SeatbeltSandbox(SandboxPolicy(workspace=str(workspace)))
    script = f"echo in > {workspace}/a && echo out > {tmp_path}/b"
    done = subprocess.run(sandbox.wrap(["/bin/sh", "-c", script], str(workspace)), cwd=workspace,
                          capture_output=True, check=False)  # fmt: skip
    assert (workspace / "a").exists() and not (tmp_path / "b").exists()
    assert done.returncode != 0
