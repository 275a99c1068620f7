"""The Workspace API: seeding, virtual skills, listings, reads, edits, deletes and the
prompt files' cache."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest

from gsv_core.errors import Forbidden
from gsv_core.errors import InvalidParams
from gsv_core.errors import NotFound
from gsv_core.workspace import FilesystemBackend
from gsv_core.workspace import ReadQuery
from gsv_core.workspace import Workspace
from gsv_core.workspace.templates import TEMPLATE_FILES
from gsv_core.workspace.templates import workspace_templates
from tests.workspace.conftest import put

SKILL = "skills/summarize/SKILL.md"


# -- seeding -----------------------------------------------------------------------------
async def test_first_use_seeds_the_templates_once(workspace: Workspace, root: Path) -> None:
    """A new agent starts with the template files; files it deletes stay deleted."""
    listing = await workspace.list("helper")
    assert listing == {"path": "/", "files": sorted(TEMPLATE_FILES), "directories": []}
    soul = (root / "agents/helper/SOUL.md").read_text()
    assert soul == workspace_templates()["SOUL.md"]
    await workspace.delete("helper", "BOOTSTRAP.md")
    fresh = Workspace(FilesystemBackend(root))  # a restarted gateway
    assert "BOOTSTRAP.md" not in (await fresh.list("helper"))["files"]


async def test_an_empty_workspace_root_lists_as_empty(root: Path) -> None:
    """Without templates or files the root is an empty listing, not a 404."""
    bare = Workspace(FilesystemBackend(root), templates={})
    assert await bare.list("main") == {"path": "/", "files": [], "directories": []}


async def test_an_existing_agent_folder_is_not_seeded(workspace: Workspace, root: Path) -> None:
    """An agent that already has files keeps exactly those."""
    put(root, "agents/main/SOUL.md", "my own soul")
    assert (await workspace.list("main"))["files"] == ["SOUL.md"]


def test_templates_are_short_and_the_heartbeat_template_holds_no_task() -> None:
    """Every template exists and is short; BOOTSTRAP.md tells the agent to delete it."""
    from gsv_core.workspace.prompt import heartbeat_file_is_empty

    templates = workspace_templates()
    assert set(templates) == set(TEMPLATE_FILES)
    assert all(0 < len(text) < 2000 for text in templates.values())
    assert "delete this file (BOOTSTRAP.md)" in templates["BOOTSTRAP.md"]
    assert heartbeat_file_is_empty(templates["HEARTBEAT.md"])


# -- virtual skills ------------------------------------------------------------------------
async def test_a_global_skill_is_read_when_the_agent_has_no_copy(
    workspace: Workspace, root: Path
) -> None:
    """skills/... falls back to the global skill and says where it came from."""
    put(root, SKILL, "# Summarize\nglobal")
    result = await workspace.read("main", SKILL)
    assert result["content"] == "# Summarize\nglobal"
    assert (result["resolvedSource"], result["resolvedPath"]) == ("global", SKILL)


async def test_the_agent_copy_of_a_skill_wins(workspace: Workspace, root: Path) -> None:
    """An agent-local skill overrides the global one of the same name."""
    put(root, SKILL, "global")
    put(root, f"agents/main/{SKILL}", "mine")
    result = await workspace.read("main", SKILL)
    assert result["content"] == "mine"
    assert result["resolvedSource"] == "agent"
    assert result["resolvedPath"] == f"agents/main/{SKILL}"


async def test_writing_a_skill_creates_the_agent_copy(workspace: Workspace, root: Path) -> None:
    """Writes under skills/ land in the agent's folder; the global file is untouched."""
    put(root, SKILL, "global")
    result = await workspace.write("main", SKILL, "changed")
    assert result == {
        "path": SKILL,
        "size": 7,
        "written": True,
        "resolvedPath": f"agents/main/{SKILL}",
        "resolvedSource": "agent",
    }
    assert (root / SKILL).read_text() == "global"
    assert (root / "agents/main" / SKILL).read_text() == "changed"


async def test_editing_a_global_skill_saves_an_override(workspace: Workspace, root: Path) -> None:
    """The edit reads the global copy and writes the agent's own; global stays as it was."""
    put(root, SKILL, "Summarise in three bullets.")
    result = await workspace.edit("main", SKILL, "three", "five")
    assert result == {
        "path": SKILL,
        "replacements": 1,
        "edited": True,
        "resolvedSource": "global",
        "resolvedPath": SKILL,
    }
    assert (root / SKILL).read_text() == "Summarise in three bullets."
    assert (root / "agents/main" / SKILL).read_text() == "Summarise in five bullets."
    assert (await workspace.read("main", SKILL))["resolvedSource"] == "agent"


async def test_skills_listings_merge_agent_and_global(workspace: Workspace, root: Path) -> None:
    """skills/ lists both sets of skill folders once; a skill folder dedupes files; the
    root shows skills/ when only global skills exist."""
    put(root, SKILL, "global")
    put(root, "skills/summarize/notes.md", "global notes")
    put(root, "skills/weather/SKILL.md", "global")
    put(root, "agents/main/skills/summarize/SKILL.md", "mine")
    put(root, "agents/main/skills/mine/SKILL.md", "mine")
    assert await workspace.list("main", "skills") == {
        "path": "skills",
        "files": [],
        "directories": ["skills/mine/", "skills/summarize/", "skills/weather/"],
    }
    assert await workspace.read("main", "skills/summarize/") == {
        "path": "skills/summarize",
        "files": ["skills/summarize/SKILL.md", "skills/summarize/notes.md"],
        "directories": [],
    }
    assert "skills/" in (await workspace.list("other"))["directories"]


async def test_an_empty_global_skills_folder_stays_hidden(workspace: Workspace, root: Path) -> None:
    """The root shows skills/ only when there is something in it."""
    (root / "skills").mkdir(parents=True)
    assert "skills/" not in (await workspace.list("main"))["directories"]


async def test_deleting_a_skill_removes_only_the_agent_copy(
    workspace: Workspace, root: Path
) -> None:
    """Deleting an override brings the global skill back; a global skill itself cannot be
    deleted from an agent's workspace (403)."""
    put(root, SKILL, "global")
    put(root, f"agents/main/{SKILL}", "mine")
    await workspace.delete("main", SKILL)
    assert (await workspace.read("main", SKILL))["content"] == "global"
    with pytest.raises(Forbidden, match="global skill"):
        await workspace.delete("main", SKILL)
    assert (root / SKILL).exists()


# -- reads, listings, errors --------------------------------------------------------------
async def test_reading_a_folder_returns_its_listing(workspace: Workspace, root: Path) -> None:
    """Folders list with paths relative to the agent root, folders ending in /."""
    put(root, "agents/main/memory/2025-01-30.md", "a")
    put(root, "agents/main/memory/2025-01-31.md", "b")
    put(root, "agents/main/memory/old/2024.md", "c")
    assert await workspace.read("main", "memory") == {
        "path": "memory",
        "files": ["memory/2025-01-30.md", "memory/2025-01-31.md"],
        "directories": ["memory/old/"],
    }
    root_listing = await workspace.read("main", "/")
    assert root_listing["path"] == "/" and "memory/" in root_listing["directories"]


async def test_file_reads_carry_size_in_bytes_time_and_type(
    workspace: Workspace, root: Path
) -> None:
    """size is bytes, lastModified ISO 8601 UTC, contentType by extension."""
    path = put(root, "agents/main/notes.json", '{"café": true}')
    os.utime(path, ns=(1_738_315_800_123_000_000, 1_738_315_800_123_000_000))
    result = await workspace.read("main", "notes.json")
    assert result == {
        "path": "notes.json",
        "content": '{"café": true}',
        "size": 15,
        "lastModified": "2025-01-31T09:30:00.123Z",
        "contentType": "application/json",
    }


async def test_missing_files_are_404(workspace: Workspace) -> None:
    """Read, list, edit and delete of a missing path each say what is missing."""
    with pytest.raises(NotFound, match=r"^Not found: nope\.md$"):
        await workspace.read("main", "nope.md")
    with pytest.raises(NotFound, match=r"^Not found: nope$"):
        await workspace.list("main", "nope")
    with pytest.raises(NotFound, match=r"^File not found: nope\.md$"):
        await workspace.edit("main", "nope.md", "a", "b")
    with pytest.raises(NotFound, match=r"^File not found: nope\.md$"):
        await workspace.delete("main", "nope.md")


async def test_files_and_folders_in_the_wrong_place_are_400(workspace: Workspace) -> None:
    """Listing a file, writing or deleting a folder or the root: clear 400s."""
    await workspace.write("main", "memory/a.md", "a")
    with pytest.raises(InvalidParams, match=r"SOUL\.md is a file, not a folder"):
        await workspace.list("main", "SOUL.md")
    with pytest.raises(InvalidParams, match="memory is a folder"):
        await workspace.write("main", "memory", "x")
    with pytest.raises(InvalidParams, match="memory is a folder"):
        await workspace.delete("main", "memory")
    with pytest.raises(InvalidParams, match="memory is a folder"):
        await workspace.edit("main", "memory", "a", "b")
    with pytest.raises(InvalidParams, match="must name a file"):
        await workspace.write("main", "/", "x")
    with pytest.raises(InvalidParams, match="skills is the skills folder"):
        await workspace.write("main", "skills/", "x")


async def test_binary_files_are_refused_as_text(workspace: Workspace, root: Path) -> None:
    """A non-UTF-8 file (e.g. an archive) is a 400, not garbage."""
    await workspace.write_bytes("main", "sessions/a.jsonl.gz", b"\x1f\x8b\x08\x00\xff")
    with pytest.raises(InvalidParams, match="not a UTF-8 text file"):
        await workspace.read("main", "sessions/a.jsonl.gz")


# -- edits ---------------------------------------------------------------------------------
async def test_edit_replaces_exactly_once(workspace: Workspace) -> None:
    """A unique oldString is replaced once."""
    await workspace.write("main", "a.md", "alpha beta gamma")
    result = await workspace.edit("main", "a.md", "beta", "BETA")
    assert result == {
        "path": "a.md",
        "replacements": 1,
        "edited": True,
        "resolvedSource": "workspace",
        "resolvedPath": "agents/main/a.md",
    }
    assert (await workspace.read("main", "a.md"))["content"] == "alpha BETA gamma"


async def test_edit_match_count_errors(workspace: Workspace) -> None:
    """Empty, missing and ambiguous oldStrings are refused with the spec's messages;
    replaceAll replaces every match."""
    await workspace.write("main", "a.md", "x x x")
    with pytest.raises(InvalidParams, match=r"^oldString must not be empty$"):
        await workspace.edit("main", "a.md", "", "y")
    with pytest.raises(InvalidParams, match=r"^oldString not found in 'a\.md'$"):
        await workspace.edit("main", "a.md", "zzz", "y")
    with pytest.raises(InvalidParams) as caught:
        await workspace.edit("main", "a.md", "x", "y")
    assert caught.value.message == (
        "oldString found 3 times in 'a.md'. "
        "Use replaceAll: true or provide a more specific oldString."
    )
    result = await workspace.edit("main", "a.md", "x", "y", replace_all=True)
    assert result["replacements"] == 3
    assert (await workspace.read("main", "a.md"))["content"] == "y y y"


async def test_append_adds_a_block_after_the_content(workspace: Workspace) -> None:
    """Appending keeps what is there and separates blocks by a blank line."""
    await workspace.append("main", "memory/2025-01-31.md", "first\n")
    await workspace.append("main", "memory/2025-01-31.md", "second\n")
    content = (await workspace.read("main", "memory/2025-01-31.md"))["content"]
    assert content == "first\n\nsecond\n"


# -- smart reads ---------------------------------------------------------------------------
async def test_smart_reads_return_parts_of_a_file(workspace: Workspace) -> None:
    """Line ranges, search with context and JSON paths each return only what was asked."""
    text = "".join(f"line {n}{' needle' if n in (5, 50) else ''}\n" for n in range(1, 101))
    await workspace.write("main", "log.md", text)
    lines = await workspace.read("main", "log.md", ReadQuery(start_line=10, end_line=12))
    assert lines["content"] == "line 10\nline 11\nline 12"
    assert (lines["startLine"], lines["endLine"], lines["totalLines"]) == (10, 12, 100)
    hits = await workspace.read("main", "log.md", ReadQuery(search="NEEDLE", context_lines=1))
    assert hits["matches"] == 2 and hits["content"].splitlines() == [
        "4-line 4", "5:line 5 needle", "6-line 6", "--", "49-line 49", "50:line 50 needle",
        "51-line 51",
    ]  # fmt: skip
    await workspace.write("main", "data.json", json.dumps({"a": {"items": [1, {"b": "c"}]}}))
    value = await workspace.read("main", "data.json", ReadQuery(json_path="a.items[1]"))
    assert json.loads(value["content"]) == {"b": "c"} and value["jsonPath"] == "a.items[1]"


async def test_smart_reads_of_folders_are_refused(workspace: Workspace) -> None:
    """startLine and friends apply to files only."""
    with pytest.raises(InvalidParams, match="apply to files"):
        await workspace.read("main", "/", ReadQuery(search="x"))


# -- prompt files --------------------------------------------------------------------------
async def test_prompt_files_are_re_read_only_when_changed(workspace: Workspace, root: Path) -> None:
    """The cached text is reused while mtime and size stay; a rewrite is seen at once."""
    day = dt.date(2025, 1, 31)
    first = await workspace.prompt_files("main", True, day)
    assert first.files["SOUL.md"] == workspace_templates()["SOUL.md"]
    soul = root / "agents/main/SOUL.md"
    stat = soul.stat()
    # same size and mtime: the cache answers (proved by changing the bytes underneath)
    soul.write_text(workspace_templates()["SOUL.md"].replace("B", "b", 1))
    os.utime(soul, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert (await workspace.prompt_files("main", True, day)).files["SOUL.md"] == first.files[
        "SOUL.md"
    ]
    await workspace.write("main", "SOUL.md", "new soul")
    assert (await workspace.prompt_files("main", True, day)).files["SOUL.md"] == "new soul"


async def test_memory_md_is_loaded_only_for_the_main_session(workspace: Workspace) -> None:
    """MEMORY.md and the daily files are loaded by date; MEMORY.md only when main."""
    await workspace.write("main", "MEMORY.md", "long term")
    await workspace.write("main", "memory/2025-01-30.md", "yesterday")
    await workspace.write("main", "memory/2025-01-31.md", "today")
    await workspace.write("main", "memory/2025-01-29.md", "older")
    main = await workspace.prompt_files("main", True, dt.date(2025, 1, 31))
    other = await workspace.prompt_files("main", False, dt.date(2025, 1, 31))
    assert main.files["MEMORY.md"] == "long term" and "MEMORY.md" not in other.files
    assert main.files["memory/2025-01-30.md"] == "yesterday"
    assert "memory/2025-01-29.md" not in main.files
