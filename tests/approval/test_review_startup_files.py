"""Review of the approval gate, login files (C): the files a shell, ssh, the desktop
session, systemd or cron read at start-up decide what runs next (the node's own Bash
runs `$SHELL -lc`, which reads the login profile), so writing them asks wherever they
are, inside the workspace too (a node started from the home directory)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gsv_core.approval.policy import ApprovalPolicy
from gsv_core.approval.policy import CallFacts
from gsv_core.approval.protected import protected_files
from gsv_core.errors import ToolFailed
from gsv_core.node.guard import NodeGuard
from gsv_core.paths import resolve_paths

KEY = "k" * 64
STARTUP = [
    ".bash_profile", ".bashrc", ".bash_login", ".profile", ".zshrc", ".zprofile", ".zshenv",
    ".zlogin", ".config/fish/config.fish", ".config/fish/conf.d/x.fish",
    ".ssh/authorized_keys", ".ssh/config", ".gitconfig", ".config/git/config",
    ".config/autostart/x.desktop", ".config/systemd/user/x.service",
    ".local/share/systemd/user/x.service", ".config/environment.d/path.conf",
    "proj/.bashrc", "./.config/../.profile", ".BASHRC", ".bashrc.d/x.sh",
    "/var/spool/cron/crontabs/me", "/etc/cron.d/job",
]  # fmt: skip


def decide(tool: str, path: str, workspace: Path) -> str:
    paths = resolve_paths()
    policy = ApprovalPolicy.from_config({}, protected_files(paths, paths.database, set()))
    facts = CallFacts(f"n1__{tool}", tool, "n1", {"path": path, "content": "x"}, str(workspace))
    return policy.decide(facts).verdict


@pytest.mark.parametrize("path", STARTUP)
@pytest.mark.parametrize("tool", ["Write", "Edit"])
def test_start_up_files_ask_even_inside_the_workspace(tool: str, path: str, tmp_path: Path) -> None:
    """With the workspace at the (fake) home directory, writing a start-up file asks at
    the gateway and the node refuses it without an approval binding."""
    assert decide(tool, path, tmp_path) == "ask"
    with pytest.raises(ToolFailed, match="does not cover exactly this call"):
        NodeGuard("n1", str(tmp_path), key=KEY).check(tool, {"path": path, "content": "x"}, None)


@pytest.mark.parametrize(
    "path", ["src/profile.py", "docs/ssh.md", "notes/.profile.bak", "gsv_core/cron/service.py"]
)
def test_files_only_named_like_start_up_files_write_unasked(path: str, tmp_path: Path) -> None:
    """`profile.py`, `ssh.md`, a backup of a profile and a `cron` package are not read at
    start-up."""
    assert decide("Write", path, tmp_path) == "allow"
