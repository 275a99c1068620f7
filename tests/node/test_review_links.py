"""Review of the approval gate, symlinks already in the workspace (D): a file tool's
path is judged where a link leads, and Grep's walk never reads gsv's secret files, with
either backend (Python, and rg, which the node uses when it is on PATH)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gsv_core.approval.binding import sign
from gsv_core.errors import ToolFailed
from gsv_core.node.guard import NodeGuard
from gsv_core.node.tools import Toolset
from gsv_core.node.tools import build_toolset
from gsv_core.paths import resolve_paths
from tests.node.tools.conftest import BACKENDS

KEY = "k" * 64


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def gsv_files() -> Path:
    """gsv's secret store, config and database under this test's GSV_HOME, each holding
    SECRET, and an ordinary file next to them; returns GSV_HOME."""
    paths = resolve_paths()
    for path in (paths.secrets_file, paths.config_file, paths.database):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"token = 'SECRET in {path.name}'\n")
    home = paths.config_dir.parent
    (home / "notes.txt").write_text("SECRET is a word here\n")
    return home


@pytest.fixture(params=BACKENDS)
async def grep(request: pytest.FixtureRequest, workspace: Path) -> AsyncIterator[Toolset]:
    tools = build_toolset(workspace, use_rg=request.param)
    yield tools
    await tools.close()


def test_a_write_through_a_link_out_of_the_workspace_is_refused(
    workspace: Path, tmp_path: Path
) -> None:
    """`docs -> /outside`: `docs/notes.txt` is refused even with the gateway's binding,
    naming where it leads; the real path asks and runs with its binding."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "docs").symlink_to(outside)
    node = NodeGuard("n1", str(workspace), key=KEY)
    through = {"path": "docs/notes.txt", "content": "x"}
    with pytest.raises(ToolFailed, match=r"leads through a symlink to .*outside/notes\.txt"):
        node.check("Write", through, sign(KEY, "Write", through, "allow"))
    real = {"path": str(outside / "notes.txt"), "content": "x"}
    with pytest.raises(ToolFailed, match="does not cover exactly this call"):
        node.check("Write", real, None)
    node.check("Write", real, sign(KEY, "Write", real, "allow"))


def test_a_link_inside_the_workspace_writes_unasked(workspace: Path) -> None:
    """`alias -> sub` in the workspace: writing through it needs no approval."""
    (workspace / "sub").mkdir()
    (workspace / "alias").symlink_to(workspace / "sub")
    NodeGuard("n1", str(workspace), key=KEY).check(
        "Write", {"path": "alias/notes.txt", "content": "x"}, None
    )


async def test_grep_does_not_read_gsv_files_through_a_link(grep: Toolset, workspace: Path) -> None:
    """`dotconfig -> GSV_HOME` and `key -> secrets.toml`: Grep with no path (which the
    guard allows) finds the ordinary file behind the link, never the secret store, the
    config or the database."""
    home = gsv_files()
    (workspace / "dotconfig").symlink_to(home)
    (workspace / "key").symlink_to(resolve_paths().secrets_file)
    NodeGuard("n1", str(workspace), key=KEY).check("Grep", {"pattern": "SECRET"}, None)
    result = await grep.invoke("Grep", {"pattern": "SECRET"})
    found = sorted(Path(m["path"]).relative_to(workspace).as_posix() for m in result["matches"])
    assert found == ["dotconfig/notes.txt"]


async def test_glob_lists_names_through_the_link_as_ls_would(
    grep: Toolset, workspace: Path
) -> None:
    """Glob reads no contents: it may list gsv's file names (as `ls` and `find` may)."""
    (workspace / "dotconfig").symlink_to(gsv_files())
    result = await grep.invoke("Glob", {"pattern": "dotconfig/**/*.txt"})
    assert [Path(p).name for p in result["matches"]] == ["notes.txt"]


def test_a_read_through_a_link_to_a_credential_store_is_refused_naming_it(
    workspace: Path,
) -> None:
    """`creds -> ~/.aws/credentials` came with a cloned project: read as written it is an
    ordinary file, so the gateway lets it through; the node sees where it leads (a place
    that asks) and refuses, naming the real path so the owner can be asked for it."""
    aws = Path.home() / ".aws"
    aws.mkdir()
    (aws / "credentials").write_text("aws_secret_access_key=SECRET\n")
    (workspace / "creds").symlink_to(aws / "credentials")
    node = NodeGuard("n1", str(workspace), KEY)
    with pytest.raises(ToolFailed, match=r"leads through a symlink to .*\.aws/credentials"):
        node.check("Read", {"path": "creds"}, None)
    node.check("Read", {"path": "README.md"}, None)  # an ordinary file reads unasked
