"""FilesystemBackend: atomic writes under concurrent writers and readers, listings without
temp files, folders pruned as files go."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gsv_core.workspace import FilesystemBackend
from gsv_core.workspace import Workspace
from gsv_core.workspace.paths import TEMP_PREFIX

KEY = "agents/main/MEMORY.md"


def contents(writers: int, size: int) -> list[bytes]:
    """Distinct, same-sized contents: a torn mix of two would match none of them."""
    return [(f"writer {n:03d}|".encode() * size)[:size] for n in range(writers)]


def test_concurrent_writers_never_leave_a_torn_file(tmp_path: Path) -> None:
    """Threads write different 256 KiB contents to one key while readers read it: every
    read and the final file is exactly one writer's full content."""
    backend = FilesystemBackend(tmp_path / "ws")
    candidates = contents(24, 256 * 1024)
    backend.write(KEY, candidates[0])
    allowed = set(candidates)
    done = threading.Event()
    torn: list[int] = []

    def read_until_done() -> int:
        reads = 0
        while not done.is_set() or reads == 0:
            found = backend.read(KEY)
            assert found is not None
            if found[0] not in allowed:
                torn.append(len(found[0]))
            reads += 1
        return reads

    with ThreadPoolExecutor(max_workers=12) as pool:
        readers = [pool.submit(read_until_done) for _ in range(4)]
        writes = [pool.submit(backend.write, KEY, data) for data in candidates * 3]
        for write in writes:
            write.result()
        done.set()
        assert all(reader.result() > 0 for reader in readers)
    assert torn == []
    final = backend.read(KEY)
    assert final is not None and final[0] in allowed
    leftovers = [p.name for p in (tmp_path / "ws/agents/main").iterdir()]
    assert leftovers == ["MEMORY.md"]  # no temp file survives


async def test_concurrent_workspace_writes_keep_one_full_content(tmp_path: Path) -> None:
    """Many workspace.write calls of different content to one file, all at once: the file
    holds exactly one of them, whole, and reading it back matches."""
    workspace = Workspace(FilesystemBackend(tmp_path / "ws"))
    candidates = [c.decode() for c in contents(40, 64 * 1024)]
    results = await asyncio.gather(*(workspace.write("main", "big.md", c) for c in candidates))
    assert all(r["written"] and r["size"] == 64 * 1024 for r in results)
    text = (tmp_path / "ws/agents/main/big.md").read_text()
    assert text in candidates
    assert (await workspace.read("main", "big.md"))["content"] == text


async def test_concurrent_edits_do_not_lose_updates(tmp_path: Path) -> None:
    """Twenty simultaneous edits of different lines of one file all land."""
    workspace = Workspace(FilesystemBackend(tmp_path / "ws"))
    await workspace.write("main", "list.md", "".join(f"item {n}: todo\n" for n in range(20)))
    await asyncio.gather(
        *(
            workspace.edit("main", "list.md", f"item {n}: todo", f"item {n}: done")
            for n in range(20)
        )
    )
    text = (await workspace.read("main", "list.md"))["content"]
    assert text.count("done") == 20 and "todo" not in text


def test_listings_hide_temp_files_and_sort_names(tmp_path: Path) -> None:
    """A leftover temp file of a crashed write never shows in a listing."""
    backend = FilesystemBackend(tmp_path / "ws")
    backend.write("agents/main/b.md", b"b")
    backend.write("agents/main/a.md", b"a")
    backend.write("agents/main/memory/x.md", b"x")
    (tmp_path / "ws/agents/main" / f"{TEMP_PREFIX}crashed").write_text("half")
    listing = backend.list("agents/main")
    assert listing is not None
    assert (listing.files, listing.directories) == (["a.md", "b.md"], ["memory"])
    assert backend.list("agents/main/nothing") is None
    assert backend.list("agents/main/a.md") is None


def test_deleting_the_last_file_prunes_empty_folders_up_to_the_agent_root(
    tmp_path: Path,
) -> None:
    """Folders exist only while they hold files (as in an object store); the agent root
    itself stays."""
    backend = FilesystemBackend(tmp_path / "ws")
    backend.write("agents/main/skills/x/SKILL.md", b"skill")
    backend.write("agents/main/SOUL.md", b"soul")
    assert backend.delete("agents/main/skills/x/SKILL.md")
    assert not (tmp_path / "ws/agents/main/skills").exists()
    assert (tmp_path / "ws/agents/main/SOUL.md").exists()
    assert backend.delete("agents/main/SOUL.md")
    assert (tmp_path / "ws/agents/main").is_dir()
    assert not backend.delete("agents/main/SOUL.md")


def test_stat_reports_size_in_bytes_and_kind(tmp_path: Path) -> None:
    """Sizes are bytes (not characters); folders are marked as such."""
    backend = FilesystemBackend(tmp_path / "ws")
    backend.write("agents/main/u.md", "héllo ✓".encode())
    stat = backend.stat("agents/main/u.md")
    assert stat is not None and not stat.is_dir and stat.size == len("héllo ✓".encode())
    folder = backend.stat("agents/main")
    assert folder is not None and folder.is_dir
    assert backend.stat("agents/main/none.md") is None
    assert backend.stat("agents/main/u.md/below") is None
