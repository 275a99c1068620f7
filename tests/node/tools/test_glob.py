"""Glob: fnmatch segments, `**`, braces, dotfiles, newest first, bounded results."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gsv_core.node.tools import Toolset
from gsv_core.node.tools.glob import MAX_GLOB_MATCHES
from gsv_core.node.tools.patterns import PatternError
from gsv_core.node.tools.patterns import expand_braces
from tests.node.tools.conftest import failure


def make(root: Path, *names: str, mtime: int | None = None) -> None:
    for offset, name in enumerate(names):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(name)
        if mtime is not None:
            os.utime(path, (mtime + offset, mtime + offset))


async def matches(tools: Toolset, pattern: str, **extra: str) -> list[str]:
    result = await tools.invoke("Glob", {"pattern": pattern, **extra})
    return sorted(result["matches"])


async def test_result_shape_and_newest_first_order(toolset: Toolset, workspace: Path) -> None:
    """Matches are absolute paths sorted by mtime, newest first, with a count."""
    make(workspace, "old.md", "mid.md", "new.md", mtime=1_600_000_000)
    result = await toolset.invoke("Glob", {"pattern": "*.md"})
    assert result == {
        "pattern": "*.md",
        "basePath": str(workspace),
        "matches": [str(workspace / n) for n in ("new.md", "mid.md", "old.md")],
        "count": 3,
    }


async def test_double_star_matches_any_depth_including_none(
    toolset: Toolset, workspace: Path
) -> None:
    """`**/*.py` finds .py files at the top and at every depth, and nothing else."""
    make(workspace, "top.py", "a/mid.py", "a/b/c/deep.py", "a/b/note.md")
    found = await matches(toolset, "**/*.py")
    assert found == [str(workspace / p) for p in ("a/b/c/deep.py", "a/mid.py", "top.py")]


async def test_star_matches_dotfiles_and_directories_but_not_deeper(
    toolset: Toolset, workspace: Path
) -> None:
    """`*` lists every entry of the directory, hidden ones and directories included."""
    make(workspace, ".env", "a/inner.txt", "b.txt")
    found = await matches(toolset, "*")
    assert found == [str(workspace / p) for p in (".env", "a", "b.txt")]


async def test_question_mark_and_brackets(toolset: Toolset, workspace: Path) -> None:
    """`?` matches one character; `[ab]` and `[!ab]` are character classes."""
    make(workspace, "a1", "b1", "c1", "a22")
    assert await matches(toolset, "?1") == [str(workspace / p) for p in ("a1", "b1", "c1")]
    assert await matches(toolset, "[ab]1") == [str(workspace / p) for p in ("a1", "b1")]
    assert await matches(toolset, "[!ab]1") == [str(workspace / "c1")]


async def test_brace_alternatives_are_expanded(toolset: Toolset, workspace: Path) -> None:
    """`src/**/*.{ts,tsx}` matches both extensions, each file once."""
    make(workspace, "src/a.ts", "src/x/b.tsx", "src/c.js")
    found = await matches(toolset, "src/**/*.{ts,tsx}")
    assert found == [str(workspace / p) for p in ("src/a.ts", "src/x/b.tsx")]
    overlapping = await toolset.invoke("Glob", {"pattern": "{src/*.ts,**/a.ts}"})
    assert overlapping["matches"] == [str(workspace / "src/a.ts")]


async def test_trailing_slash_matches_directories_only(toolset: Toolset, workspace: Path) -> None:
    """`*/` lists directories, not files."""
    make(workspace, "d/x", "f")
    assert await matches(toolset, "*/") == [str(workspace / "d")]


async def test_path_sets_the_base_and_absolute_patterns_work(
    toolset: Toolset, workspace: Path
) -> None:
    """`path` anchors the pattern; an absolute pattern ignores it."""
    make(workspace, "sub/a.txt", "b.txt")
    result = await toolset.invoke("Glob", {"pattern": "*.txt", "path": "sub"})
    assert (result["basePath"], result["matches"]) == (
        str(workspace / "sub"),
        [str(workspace / "sub/a.txt")],
    )
    absolute = await matches(toolset, f"{workspace}/*.txt", path="sub")
    assert absolute == [str(workspace / "b.txt")]


async def test_results_are_capped_at_1000_newest(toolset: Toolset, workspace: Path) -> None:
    """More than 1000 matches: the 1000 newest, `truncated: true`, no count, and a note
    telling the model how many matched."""
    names = [f"f{i:04}.txt" for i in range(MAX_GLOB_MATCHES + 5)]
    make(workspace, *names, mtime=1_600_000_000)
    result = await toolset.invoke("Glob", {"pattern": "*.txt"})
    assert result["truncated"] is True
    assert "count" not in result
    assert len(result["matches"]) == MAX_GLOB_MATCHES
    assert result["matches"][0] == str(workspace / names[-1])
    assert result["matches"][-1] == str(workspace / names[5])
    assert result["note"].startswith(f"{MAX_GLOB_MATCHES + 5} entries match; only the 1000 newest")


async def test_symlinks_are_followed_without_looping(toolset: Toolset, workspace: Path) -> None:
    """A linked directory is searched; a link back to an ancestor does not loop."""
    make(workspace, "real/a.txt")
    (workspace / "alias").symlink_to(workspace / "real")
    (workspace / "real" / "loop").symlink_to(workspace)
    found = await matches(toolset, "**/a.txt")
    assert found == [str(workspace / "alias/a.txt"), str(workspace / "real/a.txt")]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"pattern": " "}, "pattern must not be empty"),
        ({"pattern": "*", "path": "missing"}, "path does not exist: '{ws}/missing'"),
        ({"pattern": "*", "path": "file"}, "path is not a directory: '{ws}/file'"),
        ({"pattern": "{a,b}" * 9}, "pattern '{pattern}' expands to more than 256 alternatives"),
        ({}, "Invalid arguments: 'pattern' is required"),
    ],
)
async def test_bad_requests_are_clear_errors(
    toolset: Toolset, workspace: Path, args: dict[str, str], message: str
) -> None:
    """Empty patterns, missing or non-directory bases and brace bombs are refused."""
    (workspace / "file").write_text("x")
    expected = message.format(ws=workspace, pattern=args.get("pattern"))
    assert await failure(toolset, "Glob", args) == expected


async def test_restricted_glob_stays_inside(
    restricted: Toolset, workspace: Path, tmp_path: Path
) -> None:
    """`../*`, absolute patterns outside and symlinks out are refused or skipped."""
    outside = tmp_path / "outside"
    make(outside, "secret.txt")
    make(workspace, "in.txt")
    (workspace / "out").symlink_to(outside)
    for pattern in ("../*", f"{outside}/*"):
        assert "is outside the node workspace" in await failure(
            restricted, "Glob", {"pattern": pattern}
        )
    assert "is outside the node workspace" in await failure(
        restricted, "Glob", {"pattern": "out/*"}
    )
    assert await matches(restricted, "**/*.txt") == [str(workspace / "in.txt")]


def test_brace_expansion_handles_nesting_and_literals() -> None:
    """Nested groups expand in order; a group without a comma stays literal."""
    assert expand_braces("*.{py,md}") == ["*.py", "*.md"]
    assert expand_braces("{a,{b,c}}x") == ["ax", "bx", "cx"]
    assert expand_braces("{a,b}{1,2}") == ["a1", "a2", "b1", "b2"]
    assert expand_braces("{x}.txt") == ["{x}.txt"]
    assert expand_braces("unclosed{a,b") == ["unclosed{a,b"]
    with pytest.raises(PatternError):
        expand_braces("{a,b}" * 9)
