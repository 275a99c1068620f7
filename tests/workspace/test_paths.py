"""Path rules: every escape attempt is a 400 with a clear message and leaves the disk
untouched, inside the workspace and out; symlinks leading out are refused."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Awaitable
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gsv_core.errors import InvalidParams
from gsv_core.workspace import Workspace
from gsv_core.workspace.paths import content_type
from gsv_core.workspace.paths import normalise_path
from gsv_core.workspace.paths import validate_agent_id
from tests.workspace.conftest import put

NASTY_PATHS = [
    "..",
    "../escape.md",
    "../../etc/passwd",
    "a/../../escape.md",
    "memory/../../../escape.md",
    "skills/../../escape.md",
    "x/..",
    " ../padded.md",
    "memory/./../../escape.md",
    "/etc/passwd",
    "//server/share/x.md",
    "~/notes.md",
    "~",
    "C:/Windows/x.md",
    "C:",
    "C:\\x.md",
    "\\\\server\\share\\x.md",
    "..\\..\\escape.md",
    "memory\\..\\..\\escape.md",
    "x\x00.md",
    "SOUL.md\x00/../../escape.md",
    "line\nbreak.md",
    "tab\there.md",
    "del\x7f.md",
    ".gsv-tmp-sneaky",
    "memory/.gsv-tmp-sneaky",
    "a/" + "b" * 256,
    "a" * 1025,
]


def snapshot(top: Path) -> dict[str, Any]:
    """Every file (content), symlink (target) and folder under `top`."""
    found: dict[str, Any] = {}
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            path = Path(folder) / name
            key = str(path.relative_to(top))
            if path.is_symlink():
                found[key] = ("link", os.readlink(path))
            elif path.is_dir():
                found[key] = "dir"
            else:
                found[key] = path.read_bytes()
    return found


def operations(workspace: Workspace, path: str) -> list[Callable[[], Awaitable[Any]]]:
    return [
        lambda: workspace.list("main", path),
        lambda: workspace.read("main", path),
        lambda: workspace.write("main", path, "pwned"),
        lambda: workspace.edit("main", path, "a", "b"),
        lambda: workspace.delete("main", path),
        lambda: workspace.append("main", path, "pwned"),
        lambda: workspace.write_bytes("main", path, b"pwned"),
    ]


@pytest.mark.parametrize("path", NASTY_PATHS)
async def test_nasty_paths_are_refused_and_nothing_is_written(
    path: str, workspace: Workspace, tmp_path: Path
) -> None:
    """Each operation refuses the path with a 400 and the filesystem stays as it was."""
    await workspace.list("main")  # seeded first, so only the attempts could change anything
    (tmp_path / "outside").mkdir()
    before = snapshot(tmp_path)
    for operation in operations(workspace, path):
        with pytest.raises(InvalidParams, match=r"invalid path"):
            await operation()
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../x.md", "path traversal ('..') is not allowed"),
        ("/etc/passwd", "absolute paths are not allowed"),
        ("a\\b.md", "backslashes are not allowed"),
        ("a\x00b", "NUL bytes are not allowed"),
        ("a\nb", "control characters are not allowed"),
    ],
)
def test_refusals_say_what_is_wrong(path: str, reason: str) -> None:
    """The 400 names the rule the path broke."""
    with pytest.raises(InvalidParams) as caught:
        normalise_path(path)
    assert reason in caught.value.message


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("", ""),
        ("/", ""),
        ("  SOUL.md  ", "SOUL.md"),
        ("memory/", "memory"),
        ("./memory//2025-01-31.md", "memory/2025-01-31.md"),
        ("notes..md", "notes..md"),
        ("...", "..."),
        ("skills/x/SKILL.md", "skills/x/SKILL.md"),
    ],
)
def test_harmless_paths_are_normalised(raw: str, expected: str) -> None:
    """Trailing slashes, `.` and empty segments go; dots inside names are fine."""
    assert normalise_path(raw) == expected


@pytest.mark.parametrize(
    "agent_id", ["", "Main", "../x", "a/b", "-x", "_x", "ma in", "main\x00", "é", "a" * 65]
)
async def test_bad_agent_ids_are_refused(agent_id: str, workspace: Workspace, root: Path) -> None:
    """Agent ids must be `[a-z0-9][a-z0-9_-]*` up to 64 characters; nothing is created
    (the original used it unchecked)."""
    with pytest.raises(InvalidParams, match="invalid agentId"):
        await workspace.write(agent_id, "x.md", "x")
    with pytest.raises(InvalidParams, match="invalid agentId"):
        await workspace.list(agent_id)
    assert not root.exists() or snapshot(root) == {}


def test_good_agent_ids_pass() -> None:
    """Lowercase letters, digits, `_` and `-` are accepted as they are."""
    for agent_id in ("main", "helper-2", "a_b", "0", "a" * 64):
        assert validate_agent_id(agent_id) == agent_id


async def test_symlinks_leading_out_are_refused(
    workspace: Workspace, root: Path, tmp_path: Path
) -> None:
    """Links out of the agent root (outside the workspace, or into another agent) are
    refused for every operation; the targets are untouched."""
    await workspace.list("main")
    await workspace.write("other", "secret.md", "other agent's")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside")
    agent = root / "agents" / "main"
    (agent / "out").symlink_to(outside)
    (agent / "link.md").symlink_to(outside / "secret.txt")
    (agent / "sibling").symlink_to(root / "agents" / "other")
    (agent / "dangling.md").symlink_to(outside / "new.md")
    before = snapshot(tmp_path)
    for path in ("out/secret.txt", "out", "link.md", "sibling/secret.md", "dangling.md"):
        for operation in operations(workspace, path):
            with pytest.raises(InvalidParams, match="outside its workspace through a symbolic"):
                await operation()
    assert snapshot(tmp_path) == before


async def test_symlinks_inside_the_agent_root_work(workspace: Workspace, root: Path) -> None:
    """A link to another file of the same agent reads through; deleting removes the link."""
    await workspace.write("main", "notes/real.md", "real text")
    (root / "agents" / "main" / "alias.md").symlink_to(root / "agents" / "main" / "notes/real.md")
    assert (await workspace.read("main", "alias.md"))["content"] == "real text"
    await workspace.delete("main", "alias.md")
    assert not (root / "agents" / "main" / "alias.md").exists()
    assert (await workspace.read("main", "notes/real.md"))["content"] == "real text"


async def test_prompt_files_never_inject_what_a_symlink_leads_out_to(
    workspace: Workspace, root: Path, tmp_path: Path
) -> None:
    """The system prompt's files, checked a folder at a time: a file linked out of the
    agent root, or one inside a folder linked out, is left out of the prompt; a link
    inside the root is read through."""
    await workspace.list("main")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("OUTSIDE SECRET")
    (outside / "2025-01-31.md").write_text("OUTSIDE MEMORY")
    agent = root / "agents" / "main"
    (agent / "SOUL.md").unlink()
    (agent / "SOUL.md").symlink_to(outside / "secret.txt")
    (agent / "memory").symlink_to(outside)
    await workspace.write("main", "notes/user.md", "inside text")
    (agent / "USER.md").unlink()
    (agent / "USER.md").symlink_to(agent / "notes" / "user.md")
    day = dt.date(2025, 1, 31)
    files = (await workspace.prompt_files("main", True, day)).files
    assert "SOUL.md" not in files
    assert "memory/2025-01-31.md" not in files
    assert not any("OUTSIDE" in text for text in files.values())
    assert files["USER.md"] == "inside text"


async def test_a_file_standing_in_for_a_folder_is_a_clear_400(
    workspace: Workspace, root: Path
) -> None:
    """Writing SOUL.md/x when SOUL.md is a file says so."""
    put(root, "agents/main/SOUL.md", "soul")
    with pytest.raises(InvalidParams, match="a file stands where a folder is needed"):
        await workspace.write("main", "SOUL.md/x.md", "x")


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("SOUL.md", "text/markdown"),
        ("a/b.JSON", "application/json"),
        ("c.yaml", "text/yaml"),
        ("c.yml", "text/yaml"),
        ("notes.txt", "text/plain"),
        ("Makefile", "text/plain"),
        (".hidden", "text/plain"),
        ("dir.md/file", "text/plain"),
    ],
)
def test_content_type_follows_the_extension(path: str, expected: str) -> None:
    """Content-Type by extension; anything else is text/plain."""
    assert content_type(path) == expected
