"""The node's own guard (issues 13 and 29): allowlist mode without the gateway, gsv's
secrets on this machine refused, also through a symlink in the workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from gsv_core.approval.binding import sign
from gsv_core.errors import ToolFailed
from gsv_core.node.guard import NodeGuard
from gsv_core.paths import resolve_paths

KEY = "k" * 64


def guard(workspace: Path) -> NodeGuard:
    return NodeGuard("n1", str(workspace), key=KEY)


def secret_store() -> Path:
    """gsv's secrets file on this machine (this test's GSV_HOME), holding a token."""
    secrets = resolve_paths().secrets_file
    secrets.parent.mkdir(parents=True, exist_ok=True)
    secrets.write_text("token = 'x'\n")
    return secrets


def test_read_only_lines_run_and_others_need_the_gateways_approval(tmp_path: Path) -> None:
    """`ls` runs; `python3 job.py` runs only with a binding for exactly that call."""
    node = guard(tmp_path)
    node.check("Bash", {"command": "ls -la | head"}, None)
    with pytest.raises(ToolFailed, match="does not cover exactly this call"):
        node.check("Bash", {"command": "python3 job.py"}, None)
    node.check("Bash", {"command": "python3 job.py"},
               sign(KEY, "Bash", {"command": "python3 job.py"}, "allow"))  # fmt: skip


def test_secrets_are_refused_even_with_an_approval(tmp_path: Path) -> None:
    """The secret store, the database's WAL, the config: no binding lets them through."""
    paths = resolve_paths()
    for command in [f"cat {paths.secrets_file}", f"cat {paths.database}-wal",
                    f"grep -r KEY {paths.config_dir}"]:  # fmt: skip
        args = {"command": command}
        with pytest.raises(ToolFailed, match="secret"):
            guard(tmp_path).check("Bash", args, sign(KEY, "Bash", args, "allow"))


def test_a_symlink_in_the_workspace_does_not_reach_the_secret_store(tmp_path: Path) -> None:
    """Read of `notes.txt` linking to secrets.toml is refused; a plain file is read."""
    secrets = secret_store()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").symlink_to(secrets)
    (workspace / "plain.txt").write_text("hi")
    node = guard(workspace)
    with pytest.raises(ToolFailed, match="secret"):
        node.check("Read", {"path": "notes.txt"}, None)
    node.check("Read", {"path": "plain.txt"}, None)


def test_a_linked_directory_cannot_create_a_missing_secret_file(tmp_path: Path) -> None:
    """A workspace link to gsv's config dir: writing a secrets.toml that does not exist yet
    (the keyring is in use) is refused, as is a database journal; other files are not."""
    config_dir = resolve_paths().config_dir
    config_dir.mkdir(parents=True, exist_ok=True)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "link").symlink_to(config_dir)
    node = guard(workspace)
    for path in ("link/secrets.toml", "link/config.toml"):
        args = {"path": path, "content": "x"}
        with pytest.raises(ToolFailed, match="refused"):
            node.check("Write", args, sign(KEY, "Write", args, "allow"))
    (workspace / "sub").mkdir()
    node.check("Write", {"path": "sub/new.txt", "content": "x"}, None)


def test_a_call_checked_before_is_checked_again_on_the_file_system(tmp_path: Path) -> None:
    """The same Read, allowed once, is refused once its file became a link to the
    secret store: nothing decided before skips the link check."""
    secrets = secret_store()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("hi")
    node = guard(workspace)
    node.check("Read", {"path": "notes.txt"}, None)
    (workspace / "notes.txt").unlink()
    (workspace / "notes.txt").symlink_to(secrets)
    with pytest.raises(ToolFailed, match="secret"):
        node.check("Read", {"path": "notes.txt"}, None)


def test_each_call_is_judged_on_its_own_arguments(tmp_path: Path) -> None:
    """After allowed calls, a secret path, a write to a git hook without a binding and
    the same write with another binding are each judged on their own arguments."""
    node = guard(tmp_path)
    hook = {"path": ".git/hooks/pre-commit", "content": "x"}
    node.check("Read", {"path": "notes.txt"}, None)
    node.check("Write", hook, sign(KEY, "Write", hook, "allow"))
    with pytest.raises(ToolFailed, match="secret"):
        node.check("Read", {"path": str(resolve_paths().secrets_file)}, None)
    with pytest.raises(ToolFailed, match="does not cover exactly this call"):
        node.check("Write", hook, None)
    with pytest.raises(ToolFailed, match="does not cover exactly this call"):
        node.check("Write", {**hook, "content": "y"}, sign(KEY, "Write", hook, "allow"))


def test_a_workspace_reached_through_a_link_is_judged_where_it_leads(tmp_path: Path) -> None:
    """The workspace named through a symlink: its plain files are read, and a link in it
    to the secret store is still refused."""
    secrets = secret_store()
    real = tmp_path / "real"
    real.mkdir()
    (real / "plain.txt").write_text("hi")
    (real / "notes.txt").symlink_to(secrets)
    (tmp_path / "ws").symlink_to(real)
    node = guard(tmp_path / "ws")
    node.check("Read", {"path": "plain.txt"}, None)
    with pytest.raises(ToolFailed, match="secret"):
        node.check("Read", {"path": "notes.txt"}, None)
