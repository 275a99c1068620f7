"""Grep: Python regex over text files, include globs, bounded results, rg and Python agree."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gsv_core.node.tools import Toolset
from gsv_core.node.tools import build_toolset
from gsv_core.node.tools.grep import GrepTool
from tests.node.tools.conftest import BACKENDS
from tests.node.tools.conftest import HAS_RG
from tests.node.tools.conftest import failure


@pytest.fixture(params=BACKENDS)
async def restricted_grep(
    request: pytest.FixtureRequest, workspace: Path
) -> AsyncIterator[Toolset]:
    tools = build_toolset(workspace, restrict_to_workspace=True, use_rg=request.param)
    yield tools
    await tools.close()


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


def hits(result: dict[str, Any], root: Path) -> list[tuple[str, int, str]]:
    return [(os.path.relpath(m["path"], root), m["line"], m["content"]) for m in result["matches"]]


async def test_matches_carry_path_line_and_content(grep: Toolset, workspace: Path) -> None:
    """Each match is {path, 1-based line, content}, ordered by path then line, with a count."""
    write(workspace, {"b.txt": "x\nTODO two\n", "a.txt": "TODO one\nno\nTODO three\n"})
    result = await grep.invoke("Grep", {"pattern": "TODO"})
    assert result == {
        "pattern": "TODO",
        "basePath": str(workspace),
        "matches": [
            {"path": str(workspace / "a.txt"), "line": 1, "content": "TODO one"},
            {"path": str(workspace / "a.txt"), "line": 3, "content": "TODO three"},
            {"path": str(workspace / "b.txt"), "line": 2, "content": "TODO two"},
        ],
        "count": 3,
    }


async def test_regex_uses_python_syntax(grep: Toolset, workspace: Path) -> None:
    """Python-only syntax (look-ahead) works, and `$` matches before CRLF."""
    write(workspace, {"a.txt": "foobar\nfoobaz\r\nbaz\n"})
    ahead = await grep.invoke("Grep", {"pattern": r"foo(?=bar)"})
    assert hits(ahead, workspace) == [("a.txt", 1, "foobar")]
    ending = await grep.invoke("Grep", {"pattern": r"baz$"})
    assert hits(ending, workspace) == [("a.txt", 2, "foobaz"), ("a.txt", 3, "baz")]


async def test_include_filters_file_names_with_brace_expansion(
    grep: Toolset, workspace: Path
) -> None:
    """`*.{py,md}` keeps .py and .md files at any depth and drops the rest."""
    write(workspace, {"a.py": "hit\n", "d/b.md": "hit\n", "c.txt": "hit\n", "d/e.pyc": "hit\n"})
    result = await grep.invoke("Grep", {"pattern": "hit", "include": "*.{py,md}"})
    assert hits(result, workspace) == [("a.py", 1, "hit"), ("d/b.md", 1, "hit")]
    bracket = await grep.invoke("Grep", {"pattern": "hit", "include": "[ac].*"})
    assert hits(bracket, workspace) == [("a.py", 1, "hit"), ("c.txt", 1, "hit")]


async def test_more_than_100_matches_are_truncated(grep: Toolset, workspace: Path) -> None:
    """Past 100 matches the first 100 in order come back with truncated instead of count."""
    write(workspace, {f"f{i}.txt": "m\nm\nm\n" for i in range(40)})
    result = await grep.invoke("Grep", {"pattern": "m"})
    assert result["truncated"] is True
    assert "count" not in result
    assert len(result["matches"]) == 100
    hundredth_file = sorted(f"f{i}.txt" for i in range(40))[33]  # 33 files x 3 = 99 matches
    assert hits(result, workspace)[-1] == (hundredth_file, 1, "m")
    assert result["note"].startswith("only the first 100 matches are shown")


async def test_exactly_100_matches_are_not_truncated(grep: Toolset, workspace: Path) -> None:
    """Exactly 100 matches is a complete result with count 100 (and nothing to note)."""
    write(workspace, {"a.txt": "m\n" * 100})
    result = await grep.invoke("Grep", {"pattern": "m"})
    assert (result["count"], "truncated" in result, "note" in result) == (100, False, False)


async def test_long_lines_are_cut_to_200_characters(grep: Toolset, workspace: Path) -> None:
    """Matching line content is its first 200 characters; the note counts the cut lines
    (a line of exactly 200 is whole)."""
    write(workspace, {"a.txt": "needle" + "é" * 500 + "\nneedle\n" + "é" * 194 + "needle\n"})
    result = await grep.invoke("Grep", {"pattern": "needle"})
    assert result["matches"][0]["content"] == "needle" + "é" * 194
    assert result["count"] == 3
    assert result["note"] == (
        "1 matching line(s) are longer than 200 characters and shown cut; "
        "Read them with offset and limit"
    )


async def test_binary_and_non_utf8_files_are_skipped(grep: Toolset, workspace: Path) -> None:
    """Files with NUL bytes or invalid UTF-8 are not searched."""
    write(
        workspace,
        {"text.txt": "needle\n", "nul.bin": b"needle\x00\n", "latin.txt": b"needle caf\xe9\n"},
    )
    result = await grep.invoke("Grep", {"pattern": "needle"})
    assert hits(result, workspace) == [("text.txt", 1, "needle")]


async def test_symlinks_are_followed_without_loops(grep: Toolset, workspace: Path) -> None:
    """A linked directory is searched under its link name too; a loop back ends."""
    write(workspace, {"real/a.txt": "needle\n"})
    (workspace / "alias").symlink_to(workspace / "real")
    (workspace / "real" / "back").symlink_to(workspace)
    result = await grep.invoke("Grep", {"pattern": "needle"})
    assert hits(result, workspace) == [("alias/a.txt", 1, "needle"), ("real/a.txt", 1, "needle")]


async def test_git_directories_are_skipped(grep: Toolset, workspace: Path) -> None:
    """Nothing under .git is reported."""
    write(
        workspace, {".git/config": "needle\n", "src/.git/HEAD": "needle\n", ".hidden": "needle\n"}
    )
    result = await grep.invoke("Grep", {"pattern": "needle"})
    assert hits(result, workspace) == [(".hidden", 1, "needle")]


async def test_path_may_name_a_single_file(grep: Toolset, workspace: Path) -> None:
    """A file as `path` searches just that file."""
    write(workspace, {"a.txt": "needle\n", "b.txt": "needle\n"})
    result = await grep.invoke("Grep", {"pattern": "needle", "path": "b.txt"})
    assert hits(result, workspace) == [("b.txt", 1, "needle")]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"pattern": "("},
            "Invalid regex pattern '(': missing ), unterminated subpattern at position 0",
        ),
        ({"pattern": ""}, "pattern must not be empty"),
        ({"pattern": "x", "path": "missing"}, "path does not exist: '{ws}/missing'"),
        ({"pattern": "x", "glob": "*.py"}, "Invalid arguments: unknown field 'glob'"),
    ],
)
async def test_bad_requests_are_clear_errors(
    grep: Toolset, workspace: Path, args: dict[str, str], message: str
) -> None:
    """A bad regex, an empty pattern, a missing path and unknown fields are refused."""
    assert await failure(grep, "Grep", args) == message.format(ws=workspace)


async def test_restricted_grep_does_not_follow_symlinks_out(
    restricted_grep: Toolset, workspace: Path, tmp_path: Path
) -> None:
    """In a restricted workspace links pointing outside are not searched; `..` is refused."""
    write(tmp_path / "outside", {"secret.txt": "needle\n"})
    write(workspace, {"in.txt": "needle\n"})
    (workspace / "out").symlink_to(tmp_path / "outside")
    (workspace / "file-out.txt").symlink_to(tmp_path / "outside" / "secret.txt")
    result = await restricted_grep.invoke("Grep", {"pattern": "needle"})
    assert hits(result, workspace) == [("in.txt", 1, "needle")]
    message = await failure(restricted_grep, "Grep", {"pattern": "needle", "path": ".."})
    assert "is outside the node workspace" in message


def rich_tree(root: Path) -> None:
    """Everything the backends could disagree on, in one tree."""
    write(
        root,
        {
            "a/x.py": "alpha\nbeta alpha\n",
            "a b": "alpha\n",
            "a-b.md": "ALPHA alpha\r\nalpha\r\n",
            "a.txt": "\ufeffalpha first\n",
            ".hidden/h.py": "alpha\n",
            ".git/objects/o": "alpha\n",
            "bin.dat": b"alpha\x00\x01",
            "latin.txt": b"alpha caf\xe9\n",
            "mid\u00e9/z.py": "alpha " + "z" * 300 + "\n",
            "nested/deep/er/f.py": "".join(f"alpha {i}\n" for i in range(60)),
            "nested/g.md": "no match here\nalpha\n",
            "trail": "alpha",
            "cr-only": "alpha\rbeta\n",
        },
    )
    (root / "link").symlink_to(root / "nested")
    (root / "nested" / "loop").symlink_to(root)
    (root / "dangling").symlink_to(root / "nowhere")
    os.mkfifo(root / "fifo")


@pytest.mark.skipif(not HAS_RG, reason="rg not on PATH")
@pytest.mark.parametrize(
    ("pattern", "include"),
    [
        ("alpha", None),
        ("^alpha$", None),
        (r"(?i)alpha\s", None),
        ("alpha", "*.{py,md}"),
        ("alpha", "[ab]*"),
        (r"\d+$", "f.py"),
        ("beta$", None),
        ("^beta", None),
        ("nothing-matches-this", None),
        (r"(a)lph\1", None),
        (r"alpha\rbeta", None),
    ],
)
async def test_rg_and_python_backends_agree(
    workspace: Path, pattern: str, include: str | None
) -> None:
    """On the same tree both backends return identical results (order and truncation too)."""
    rich_tree(workspace)
    args: dict[str, Any] = {"pattern": pattern}
    if include:
        args["include"] = include
    results = []
    for use_rg in (False, True):
        tools = build_toolset(workspace, use_rg=use_rg)
        results.append(await tools.invoke("Grep", args))
        await tools.close()
    assert results[0] == results[1]
    assert results[0]["matches"] or pattern == "nothing-matches-this"


def test_use_rg_true_requires_rg(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Asking for rg when it is not on PATH is a construction error, not a silent fallback."""
    from gsv_core.node.tools.workspace import Workspace

    monkeypatch.setenv("PATH", str(workspace))
    with pytest.raises(ValueError, match="rg is not on PATH"):
        GrepTool(Workspace(workspace), use_rg=True)
    assert GrepTool(Workspace(workspace)).rg is None


@pytest.mark.skipif(not HAS_RG, reason="rg not on PATH")
@pytest.mark.parametrize("pattern", ["alpha", "alpha$", r"^\w+ \d$"])
def test_rg_backend_yields_the_python_sequence(workspace: Path, pattern: str) -> None:
    """Without the 100 cap, rg's confirmed matches equal the Python walk, in the same order."""
    import re
    import shutil
    import threading

    from gsv_core.node.tools.ripgrep import rg_matches
    from gsv_core.node.tools.textsearch import SKIPPED_DIRS
    from gsv_core.node.tools.textsearch import GrepQuery
    from gsv_core.node.tools.textsearch import python_matches
    from gsv_core.node.tools.walk import TreeWalker

    rich_tree(workspace)
    query = GrepQuery(re.compile(pattern), str(workspace))
    never = threading.Event()
    walker = TreeWalker(never, skip_names=SKIPPED_DIRS)
    expected = list(python_matches(query, walker))
    rg = shutil.which("rg")
    assert rg is not None
    assert list(rg_matches(rg, query, lambda path: True, never)) == expected
    assert expected
