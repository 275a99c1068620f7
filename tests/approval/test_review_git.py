"""Review of the approval gate, git (A): a repository's own files decide what git runs
(`core.fsmonitor` is a command `git status` starts), so writing them asks however the
path is spelt, a repository laid out by hand cannot be made unasked, and Bash runs git
with fsmonitor off. The git tests run real git in tmp_path."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gsv_core.approval.binding import sign
from gsv_core.approval.policy import ApprovalPolicy
from gsv_core.approval.policy import CallFacts
from gsv_core.approval.protected import protected_files
from gsv_core.errors import ToolFailed
from gsv_core.node.guard import NodeGuard
from gsv_core.node.tools import build_toolset
from gsv_core.node.tools.processes import shell_environment
from gsv_core.paths import resolve_paths

KEY = "k" * 64
GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="git not on PATH")


def gateway_verdict(tool: str, path: str, workspace: Path) -> str:
    """The gateway's decision (default config) for writing `path`."""
    paths = resolve_paths()
    policy = ApprovalPolicy.from_config({}, protected_files(paths, paths.database, set()))
    args = {"path": path, "content": "x"} if tool == "Write" else {"path": path}
    facts = CallFacts(f"n1__{tool}", tool, "n1", args, str(workspace))
    return policy.decide(facts).verdict


def node_runs_unasked(tool: str, path: str, workspace: Path) -> bool:
    """Whether the node guard runs the call without any approval binding."""
    try:
        NodeGuard("n1", str(workspace), key=KEY).check(tool, {"path": path, "content": "x"}, None)
    except ToolFailed:
        return False
    return True


def planted_config(marker: Path, *, worktree: bool = False) -> str:
    """A repository config whose fsmonitor hook creates `marker` (and fails)."""
    lines = ["[core]", "\trepositoryformatversion = 0", "\tbare = false"]
    if worktree:
        lines.append("\tworktree = ..")
    lines.append(f'\tfsmonitor = "touch {marker}; false"')
    return "\n".join(lines) + "\n"


def git_init(repo: Path) -> None:
    subprocess.run([GIT or "git", "init", "-q", str(repo)], check=True)


@pytest.mark.parametrize(
    "path",
    [
        "proj/.git/config",
        "proj/.git/./config",
        "proj/.git//config",
        "proj/.git/x/../config",
        "proj/.git/./hooks/pre-commit",
        "./proj/.git/hooks/../config",
        "proj/.git/commondir",
        "proj/.git/worktrees/w/gitdir",
        "proj/.git/info/attributes",
        "proj/.GIT/config",
        "sub/.git",
        "mirror.git/config",
        "evil/HEAD",
        "elsewhere/commondir",
        ".gitconfig",
        ".config/git/config",
    ],
)
@pytest.mark.parametrize("tool", ["Write", "Edit"])
def test_writing_what_decides_what_git_runs_asks_however_it_is_spelt(
    tool: str, path: str, tmp_path: Path
) -> None:
    """Anything in a `.git` directory, a `*.git` directory, `HEAD`, `commondir`,
    `gitdir` and git's user config ask at the gateway and are refused by the node
    without a binding, with `.`, `..` and doubled slashes in the path too."""
    assert gateway_verdict(tool, path, tmp_path) == "ask"
    assert not node_runs_unasked(tool, path, tmp_path)


@pytest.mark.parametrize("path", ["src/git.py", "docs/.github/x.md", "head.txt", ".gitignore"])
def test_ordinary_files_named_like_git_still_write_unasked(path: str, tmp_path: Path) -> None:
    """`.github/`, `.gitignore`, `git.py` and `head.txt` are not git's own files."""
    assert gateway_verdict("Write", path, tmp_path) == "allow"
    assert node_runs_unasked("Write", path, tmp_path)


@needs_git
def test_a_bare_repository_found_on_disk_is_not_written_unasked(tmp_path: Path) -> None:
    """A real bare repository named without `.git` (`dotfiles`): the node refuses to
    write its config or anything in it, even with the gateway's approval binding (the
    gateway cannot see the disk); a file next to it is written."""
    subprocess.run([GIT or "git", "init", "-q", "--bare", str(tmp_path / "dotfiles")], check=True)
    node = NodeGuard("n1", str(tmp_path), key=KEY)
    for path in ("dotfiles/config", "dotfiles/info/exclude"):
        args = {"path": path, "content": "x"}
        with pytest.raises(ToolFailed, match="git repository directory"):
            node.check("Write", args, sign(KEY, "Write", args, "allow"))
    node.check("Write", {"path": "notes.txt", "content": "x"}, None)


@needs_git
def test_a_linked_git_directory_is_judged_where_it_leads(tmp_path: Path) -> None:
    """`meta -> proj/.git`: writing `meta/config` is refused with the real path named."""
    git_init(tmp_path / "proj")
    (tmp_path / "meta").symlink_to(tmp_path / "proj" / ".git")
    node = NodeGuard("n1", str(tmp_path), key=KEY)
    args = {"path": "meta/config", "content": "x"}
    with pytest.raises(ToolFailed, match=r"proj/\.git/config"):
        node.check("Write", args, sign(KEY, "Write", args, "allow"))


@needs_git
async def test_git_status_through_bash_runs_no_planted_fsmonitor(tmp_path: Path) -> None:
    """A repository whose config was planted by other means (an archive, a clone of a
    prepared tree): `git status` run by the Bash tool does not start its fsmonitor,
    while a plain `git status` does (the test is real)."""
    repo, marker = tmp_path / "ws" / "proj", tmp_path / "pwned"
    git_init(repo)
    (repo / ".git" / "config").write_text(planted_config(marker))
    subprocess.run([GIT or "git", "status", "--short"], cwd=repo, capture_output=True)
    assert marker.exists(), "plain git status should run the planted fsmonitor"
    marker.unlink()
    tools = build_toolset(tmp_path / "ws")
    try:
        result = await tools.invoke("Bash", {"command": "git -C proj status --short"})
    finally:
        await tools.close()
    assert result["exitCode"] == 0
    assert not marker.exists()


@needs_git
def test_a_repository_laid_out_by_hand_cannot_be_finished_unasked(tmp_path: Path) -> None:
    """The reviewer's bare repository (`evil/config`, `objects/`, `refs/`, then `HEAD`):
    the last write asks, and once git would take the directory for a repository the
    node refuses further writes into it; Bash's git runs no fsmonitor from it either."""
    workspace, marker = tmp_path / "ws", tmp_path / "pwned"
    workspace.mkdir()
    files = {
        "evil/objects/info/keep": "",
        "evil/refs/heads/keep": "",
        "evil/config": planted_config(marker, worktree=True),
    }
    for path, content in files.items():
        assert node_runs_unasked("Write", path, workspace)
        (workspace / path).parent.mkdir(parents=True, exist_ok=True)
        (workspace / path).write_text(content)
    assert gateway_verdict("Write", "evil/HEAD", workspace) == "ask"
    assert not node_runs_unasked("Write", "evil/HEAD", workspace)
    (workspace / "evil" / "HEAD").write_text("ref: refs/heads/main\n")  # an owner said yes
    assert not node_runs_unasked("Write", "evil/config", workspace)
    env = shell_environment(os.environ)
    subprocess.run(["sh", "-c", "git -C evil status --short"], cwd=workspace, env=env,
                   capture_output=True)  # fmt: skip
    assert not marker.exists()


def test_command_scope_git_config_is_appended_to_the_owners() -> None:
    """An environment already carrying `GIT_CONFIG_COUNT` keeps its entries."""
    env = shell_environment({"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "a.b",
                             "GIT_CONFIG_VALUE_0": "c"})  # fmt: skip
    assert env["GIT_CONFIG_COUNT"] == "2"
    assert (env["GIT_CONFIG_KEY_0"], env["GIT_CONFIG_KEY_1"]) == ("a.b", "core.fsmonitor")
    assert env["GIT_CONFIG_VALUE_1"] == "false"
