"""gsv's secret paths are compared without case: on macOS's file system (and Windows')
`~/.CONFIG/GSV/...` is the same file as `~/.config/gsv/...`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gsv_core.approval.policy import ApprovalPolicy
from gsv_core.approval.policy import CallFacts
from gsv_core.approval.protected import protected_files
from gsv_core.paths import resolve_paths


@pytest.mark.parametrize("mode", ["allowlist", "off"])
def test_a_secret_path_in_other_case_is_still_refused(tmp_path: Path, mode: str) -> None:
    paths = resolve_paths()
    policy = ApprovalPolicy.from_config(
        {"toolApproval": {"mode": mode}}, protected_files(paths, paths.database, set())
    )
    secret = str(paths.secrets_file)
    workspace = tmp_path / "ws"
    relative = os.path.relpath(secret, workspace)
    for line in (f"cat {secret.upper()}", f"cat {relative.upper()}",
                 f"head {secret.swapcase()}", f"cat {secret[:-4]}TOML"):  # fmt: skip
        facts = CallFacts("n1__Bash", "Bash", "n1", {"command": line}, str(workspace))
        assert policy.decide(facts).verdict == "deny", line
    read = CallFacts("n1__Read", "Read", "n1", {"path": secret.upper()}, str(workspace))
    assert policy.decide(read).verdict == "deny"
