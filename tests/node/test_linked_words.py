"""Issue 37.3: a shell line's words are judged on the node where they lead. A symlink
that came with a cloned project (`notes -> ~/.config/gsv/secrets.toml`) is read by `cat
notes`; the gateway sees only the word and cannot see this disk, so the node's guard
resolves the words of the line (and the files its patterns match) and refuses one that
leads to gsv's secrets or a process's environment, naming the real path -- with the
gateway's approval or without."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from gsv_core.approval.binding import sign
from gsv_core.approval.policy import ApprovalPolicy
from gsv_core.approval.policy import CallFacts
from gsv_core.approval.protected import protected_files
from gsv_core.errors import ToolFailed
from gsv_core.node import guard as guard_module
from gsv_core.node.guard import NodeGuard
from gsv_core.paths import resolve_paths
from tests.conftest import PROVIDER_KEY

KEY = "k" * 64
SECRET = "OWNER-SECRET-TOKEN"


@dataclass
class Project:
    """A workspace as a cloned project may come: links to gsv's files among its own."""

    workspace: Path
    secrets: Path
    config_dir: Path

    def bash(self, line: str, workdir: str = "") -> str:
        """What a real bash prints running `line` in the workspace (or `workdir` in it)."""
        done = subprocess.run(["bash", "-c", line], cwd=self.workspace / workdir,
                              capture_output=True, timeout=30)  # fmt: skip
        return (done.stdout + done.stderr).decode(errors="replace")

    def check(self, line: str, tool: str = "Bash", **extra: str) -> None:
        """The node's guard on the call, as the gateway would send it approved."""
        args = (
            {"command": line, **extra}
            if tool == "Bash"
            else {"action": "write", "data": line, **extra}
        )
        NodeGuard("n1", str(self.workspace), key=KEY).check(
            tool, args, sign(KEY, tool, args, "allow")
        )


@pytest.fixture
def project(tmp_path: Path, key_holder: int) -> Project:
    paths = resolve_paths()
    for path in (paths.secrets_file, paths.config_file, paths.database):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"token = '{SECRET}'\n")
    workspace = tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)
    (workspace / "sub" / "plain.txt").write_text("hello\n")
    (workspace / "notes").symlink_to(paths.secrets_file)
    (workspace / "history").symlink_to(paths.database)
    (workspace / "settings").symlink_to(paths.config_file)
    (workspace / "dotconfig").symlink_to(paths.config_dir)
    (workspace / "env").symlink_to(f"/proc/{key_holder}/environ")
    (workspace / "alias").symlink_to(workspace / "sub")
    (workspace / "dangling").symlink_to(tmp_path / "nowhere")
    return Project(workspace, paths.secrets_file, paths.config_dir)


LINKED = [
    ("cat notes", "secrets.toml"),
    ("cat ./notes", "secrets.toml"),
    ("cat not*", "secrets.toml"),
    ("cat n[o]tes", "secrets.toml"),
    ("cat -- notes", "secrets.toml"),
    ("cat < notes", "secrets.toml"),
    ("dd if=notes status=none", "secrets.toml"),
    ("cat sub/../notes", "secrets.toml"),
    ("cat alias/../notes", "secrets.toml"),
    ("head -c 100 history", "gsv.db"),
    ("cat settings", "config.toml"),
    ("cat dotconfig/secrets.toml", "secrets.toml"),
    ("cd dotconfig && cat secrets.toml", "secrets.toml"),
    ("grep -r TOKEN dotconfig", "config"),
    ("grep -r TOKEN dotconfig/.", "config"),
    ("ls sub && cat {notes,x}", "secrets.toml"),
    ("echo x | cat - notes", "secrets.toml"),
    ("strings env", "environ"),
]


@pytest.mark.parametrize(("line", "real"), LINKED)
def test_a_word_linking_to_gsvs_secrets_is_refused_naming_the_real_path(
    project: Project, line: str, real: str
) -> None:
    """Run for real the line prints the secret (or the key holder's provider key); the
    node refuses it even with the gateway's approval, naming where the link leads."""
    shown = project.bash(line)
    assert SECRET in shown or PROVIDER_KEY in shown or "TOKEN" in shown
    with pytest.raises(ToolFailed, match=rf"leads through a symlink to /\S*{real}"):
        project.check(line)


def test_the_gateway_cannot_see_the_link(project: Project) -> None:
    """The control: judged as written (the gateway's view), `cat notes` runs unasked."""
    paths = resolve_paths()
    policy = ApprovalPolicy.from_config({}, protected_files(paths, paths.database, set()))
    facts = CallFacts("n1__Bash", "Bash", "n1", {"command": "cat notes"}, "/elsewhere")
    assert policy.decide(facts).verdict == "allow"


def test_words_are_resolved_from_the_calls_workdir(project: Project) -> None:
    """`cat ../notes` from `workdir: sub` is the workspace's `notes`."""
    assert SECRET in project.bash("cat ../notes", workdir="sub")
    with pytest.raises(ToolFailed, match=r"secrets\.toml"):
        project.check("cat ../notes", workdir="sub")
    project.check("cat plain.txt", workdir="sub")


def test_a_process_writes_line_is_judged_where_its_words_lead(project: Project) -> None:
    """Process write and submit carry shell lines too."""
    with pytest.raises(ToolFailed, match=r"secrets\.toml"):
        project.check("cat notes\n", tool="Process", sessionId="s1")


@pytest.mark.parametrize(
    "line",
    ["cat alias/plain.txt", "cat sub/plain.txt", "ls -la", "ls dotconfig", "find . -name '*.txt'",
     "cat dangling", "cat sub/*", "du -sh dotconfig", "grep -r hello alias", "cat dotconfig/../x"],
)  # fmt: skip
def test_links_to_ordinary_places_and_names_only_reads_still_run(
    project: Project, line: str
) -> None:
    """A link inside the workspace, a listing, a dangling link, a pattern matching plain
    files: run unasked, and for real print no secret."""
    NodeGuard("n1", str(project.workspace), key=KEY).check("Bash", {"command": line}, None)
    assert SECRET not in project.bash(line)


@pytest.mark.parametrize(
    "line",
    ["cat 'a\x00b'", "cat " + "x" * 5000, "cat loop/x", "cat ''", "cat /", "cat ~nobody/x",
     "cat $HOME/x", "cat \"$(echo notes)\""],
)  # fmt: skip
def test_odd_words_are_judged_without_error(project: Project, line: str) -> None:
    """A NUL byte, a name longer than the system takes, a link loop, an empty word, a
    variable: no crash; each is judged (and may need the gateway's approval)."""
    (project.workspace / "loop").symlink_to("loop")
    try:
        NodeGuard("n1", str(project.workspace), key=KEY).check("Bash", {"command": line}, None)
    except ToolFailed as refused:
        assert "refused on this node" in str(refused)


def test_a_line_naming_more_paths_than_the_node_checks_is_refused(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past MAX_LINE_PATHS (here 8) the line is refused, not checked in part."""
    monkeypatch.setattr(guard_module, "MAX_LINE_PATHS", 8)
    for index in range(10):
        (project.workspace / "sub" / f"f{index}").write_text("x")
    node = NodeGuard("n1", str(project.workspace), key=KEY)
    with pytest.raises(ToolFailed, match="more than 8 paths"):
        node.check("Bash", {"command": "cat sub/f*"}, None)
    node.check("Bash", {"command": "cat sub/f1 sub/f2"}, None)


def test_the_workspace_itself_reached_through_a_link(project: Project, tmp_path: Path) -> None:
    """A workspace named through a symlink: its plain files run, its link to the secret
    store is still refused."""
    (tmp_path / "via").symlink_to(project.workspace)
    node = NodeGuard("n1", str(tmp_path / "via"), key=KEY)
    node.check("Bash", {"command": "cat sub/plain.txt"}, None)
    with pytest.raises(ToolFailed, match=r"secrets\.toml"):
        node.check("Bash", {"command": "cat notes"}, None)
    assert os.path.islink(tmp_path / "via")
