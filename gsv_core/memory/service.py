"""`MemoryService`: the gateway's memory index (docs/memory.md). Searches and reads
around hits for the native tools and the `memory.*` methods, keeps notes current (a
file written through gsv is marked at once; an edit on disk is noticed at the next
search by its mtime and size), indexes archives as they are written, and runs the full
build in the background: once for an install that had history before the index existed,
and again on `memory.reindex`. `status()` says how far the build got.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sqlite3
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gsv_core.errors import InvalidParams
from gsv_core.memory import index as ix
from gsv_core.memory.embeddings import Embedder
from gsv_core.memory.embeddings import EmbeddingsEndpoint
from gsv_core.memory.embeddings import Spending
from gsv_core.memory.notes import NOTES_DIR
from gsv_core.memory.notes import ROOT_NOTES
from gsv_core.memory.notes import is_note
from gsv_core.memory.search import MemoryScope
from gsv_core.memory.search import SearchRequest
from gsv_core.memory.search import around
from gsv_core.memory.search import search
from gsv_core.memory.search import search_fused
from gsv_core.storage.archive import parse_archive
from gsv_core.storage.db import Database
from gsv_core.workspace.backend import Stat
from gsv_core.workspace.backend import StorageBackend
from gsv_core.workspace.paths import AGENTS_DIR
from gsv_core.workspace.paths import agent_root
from gsv_core.workspace.paths import join

log = logging.getLogger(__name__)
SESSIONS_DIR = "sessions"  # an agent's transcript archives (gsv_core/gateway/agent_host.py)
ARCHIVE_SUFFIX = ".jsonl.gz"
BATCH_SESSIONS = 50  # sessions indexed per write while building (other writes go between)
_GLOB = frozenset("*?[")
_SKIP_DIRS = frozenset({SESSIONS_DIR, "skills", ".git"})


@dataclass
class BuildProgress:
    state: str = "ready"  # "building" while the background build runs
    done: int = 0
    total: int = 0
    error: str | None = None


class MemoryService:
    def __init__(
        self,
        db: Database,
        backend: StorageBackend,
        extra_notes: Callable[[], Sequence[str]] = tuple,
        embeddings: Callable[[], EmbeddingsEndpoint | None] = lambda: None,
        spending: Spending | None = None,
    ) -> None:
        self._db = db
        self._backend = backend
        self._extra_notes = extra_notes  # memory.notes: more paths or patterns per agent
        self.index = ix.MemoryIndex()
        db.when_quiet(self.index.catch_up, self.index.is_pending, self.index.committed)
        self.progress = BuildProgress()
        self._build: asyncio.Task[None] | None = None
        self._dirty: set[tuple[str, str]] = set()
        self._notes_lock = asyncio.Lock()
        # memory.embeddings: off unless configured; its cost is recorded and budgeted
        self.embedder = Embedder(db, embeddings, spending, self.caught_up)

    # -- life ---------------------------------------------------------------------------
    async def start(self) -> None:
        """Build in the background when the index was never built (an older install)."""
        if await self._db.read(lambda c: ix.get_state(c, ix.BUILT)) != "1":
            self._start_build()
        self.embedder.kick()

    async def close(self) -> None:
        await self.embedder.close()
        if self._build is not None:
            self._build.cancel()
            await asyncio.wait({self._build})  # its end, not ours: a cancel of us still raises

    async def reindex(self) -> dict[str, Any]:
        """Forget the index and build it again in the background."""
        await self.close()
        await self._db.write(ix.wipe)
        self._start_build()
        return await self.status()

    async def wait_built(self) -> None:
        """Until the running build (if any) ends."""
        if self._build is not None:
            await asyncio.wait({self._build})

    async def caught_up(self) -> None:
        """Index now the messages stored but not indexed yet (memory/index.py): every
        reader of the index calls this first, so it finds what was sent before it."""
        if self.index.pending:
            self.index.committed(await self._db.write(self.index.catch_up))

    async def status(self) -> dict[str, Any]:
        await self.caught_up()
        endpoint = self.embedder.endpoint()

        def read(conn: sqlite3.Connection) -> dict[str, Any]:
            counts = dict(conn.execute("SELECT kind, COUNT(*) FROM memory_docs GROUP BY kind"))
            (archived,) = conn.execute(
                "SELECT COUNT(*) FROM memory_docs WHERE archive IS NOT NULL"
            ).fetchone()
            (files,) = conn.execute("SELECT COUNT(*) FROM memory_files").fetchone()
            return {"messages": counts.get(ix.MESSAGE, 0), "archivedMessages": archived,
                    "noteChunks": counts.get(ix.NOTE, 0), "notes": files,
                    "bytes": _index_bytes(conn),
                    "embeddings": _embeddings(conn, endpoint, self.embedder.error)}  # fmt: skip

        return self.build_status() | await self._db.read(read)

    def build_status(self) -> dict[str, Any]:
        """How far the background build got (cheap: for `gateway.status`)."""
        p = self.progress
        found: dict[str, Any] = {"state": p.state, "done": p.done, "total": p.total}
        if p.error:
            found["error"] = p.error
        return found

    # -- keeping current ----------------------------------------------------------------
    def file_changed(self, agent_id: str, path: str) -> None:
        """A workspace file was written through gsv: a note is indexed again next search."""
        if is_note(path, self._extra_notes()):
            self._dirty.add((agent_id, path))

    async def archived(
        self, agent_id: str, path: str, messages: list[dict[str, Any]], meta: dict[str, Any]
    ) -> None:
        """An archive was written (`path` relative to the agent's folder)."""
        await self._db.write(lambda c: ix.index_archive(c, agent_id, path, meta, messages))
        self.embedder.kick()

    # -- reading ------------------------------------------------------------------------
    async def search(self, request: SearchRequest, scope: MemoryScope) -> list[dict[str, Any]]:
        """Notes are checked for changes while the index is searched (both mostly wait on
        the disk); when some changed, the search runs again on the index brought up to date."""

        await self.caught_up()
        self.embedder.kick()  # what was stored since the last search is embedded next
        endpoint = self.embedder.endpoint()
        vector = await self.embedder.query_vector(request.text) if endpoint else None

        async def searched() -> list[dict[str, Any]]:
            if endpoint is not None and vector is not None:
                model = endpoint.model
                return await self._db.read(lambda c: search_fused(c, request, scope, vector, model))
            return await self._db.read(lambda c: search(c, request, scope))

        if not scope.notes or request.kind == "sessions":
            return await searched()
        changed, hits = await asyncio.gather(self.refresh_notes(), searched())
        return await searched() if changed else hits

    async def first_ref(self, agent_id: str, archive: str) -> str | None:
        """The ref of the first message of an indexed archive (`archive` relative to the
        agent's folder), for a note to point at; None when it is not indexed."""
        await self.caught_up()
        return await self._db.read(lambda c: ix.first_archived_ref(c, agent_id, archive))

    async def around(self, ref: str, before: int, after: int, scope: MemoryScope) -> dict[str, Any]:
        await self.caught_up()
        return await self._db.read(lambda c: around(c, ref, before, after, scope))

    async def refresh_notes(self) -> int:
        """Index the notes that changed since they were indexed; how many did."""
        async with self._notes_lock:
            on_disk = await asyncio.to_thread(self._note_stats)
            known = await self._db.read(ix.note_stats)
            dirty, self._dirty = self._dirty, set()
            stale = [n for n, stat in on_disk.items() if known.get(n) != stat or n in dirty]
            gone = [n for n in known if n not in on_disk]
            for agent, path in stale:
                await self._reindex_note(agent, path)
            for agent, path in gone:
                await self._forget_note(agent, path)
            return len(stale) + len(gone)

    async def _forget_note(self, agent: str, path: str) -> None:
        await self._db.write(lambda c: ix.replace_note(c, agent, path, None, None))

    async def _reindex_note(self, agent: str, path: str) -> None:
        try:
            found = await asyncio.to_thread(self._backend.read, join(agent_root(agent), path))
        except InvalidParams:  # it became a link out of the workspace: no note
            found = None
        if found is None:
            stat, text = None, None
        else:
            data, st = found
            stat, text = (st.mtime_ns, st.size), data.decode("utf-8", errors="replace")
        await self._db.write(lambda c: ix.replace_note(c, agent, path, stat, text))

    def _note_stats(self) -> dict[tuple[str, str], tuple[int, int]]:
        """(agent, path) -> (mtime_ns, size) of every note in the workspace now: one pass
        over each agent's memory/ folder (over its whole folder only for glob patterns)."""
        found: dict[tuple[str, str], tuple[int, int]] = {}
        extra = [p for p in self._extra_notes() if isinstance(p, str)]
        globs = any(_GLOB & set(p) for p in extra)
        for agent in self._agents():
            root = agent_root(agent)
            if globs:
                files = self._backend.files(root)
            else:
                files = {join(NOTES_DIR, p): st for p, st in
                         self._backend.files(join(root, NOTES_DIR)).items()}  # fmt: skip
                for path in (*ROOT_NOTES, *extra):
                    if (stat := self._stat(join(root, path))) and not stat.is_dir:
                        files[path] = stat
            for path, stat in files.items():
                if is_note(path, extra) and path.split("/", 1)[0] not in _SKIP_DIRS:
                    found[(agent, path)] = (stat.mtime_ns, stat.size)
        return found

    def _stat(self, key: str) -> Stat | None:
        """A note's stat; None for one that leads out of its workspace (a symlink)."""
        try:
            return self._backend.stat(key)
        except InvalidParams:
            return None

    def _agents(self) -> list[str]:
        listing = self._backend.list(AGENTS_DIR)
        return listing.directories if listing else []

    # -- the full build -----------------------------------------------------------------
    def _start_build(self) -> None:
        self.progress = BuildProgress("building")
        self._build = asyncio.create_task(self._run_build(), name="gsv-memory-build")

    async def _run_build(self) -> None:
        try:
            await self._build_all()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the gateway goes on without a complete index
            log.exception("building the memory index failed")
            self.progress.error = f"build failed: {exc}"
        else:
            self.progress.state = "ready"

    async def _build_all(self) -> None:
        archives = await asyncio.to_thread(self._archive_paths)
        keys = await self._db.select(
            lambda r: str(r[0]), "SELECT DISTINCT session_key FROM messages ORDER BY session_key"
        )
        self.progress.total = len(archives) + len(keys)
        for agent, path in archives:
            await self._index_archive_file(agent, path)
            self.progress.done += 1
        for start in range(0, len(keys), BATCH_SESSIONS):
            batch = keys[start : start + BATCH_SESSIONS]
            await self._db.write(functools.partial(ix.index_sessions, keys=batch))
            self.progress.done += len(batch)
        await self.refresh_notes()
        await self._db.write(lambda c: ix.set_state(c, ix.BUILT, "1"))

    def _archive_paths(self) -> list[tuple[str, str]]:
        found = []
        for agent in self._agents():
            listing = self._backend.list(join(agent_root(agent), SESSIONS_DIR))
            for name in listing.files if listing else []:
                if name.endswith(ARCHIVE_SUFFIX):
                    found.append((agent, join(SESSIONS_DIR, name)))
        return found

    async def _index_archive_file(self, agent: str, path: str) -> None:
        found = await asyncio.to_thread(self._backend.read, join(agent_root(agent), path))
        if found is None:
            return
        try:
            meta, messages = await asyncio.to_thread(parse_archive, found[0])
        except ValueError as exc:
            log.warning("memory index: skipped %s/%s: %s", agent, path, exc)
            return
        await self._db.write(lambda c: ix.index_archive(c, agent, path, meta, messages))


def _embeddings(
    conn: sqlite3.Connection, endpoint: EmbeddingsEndpoint | None, error: str | None
) -> dict[str, Any] | None:
    """The semantic ranking's state: None when off; else its model, how many pieces have
    its vectors and the last error of the background embedding, if any."""
    if endpoint is None:
        return None
    (vectors,) = conn.execute(
        "SELECT COUNT(*) FROM memory_vectors WHERE model = ?", (endpoint.model,)
    ).fetchone()
    found: dict[str, Any] = {"model": endpoint.model, "vectors": vectors}
    if error:
        found["error"] = error
    return found


def _index_bytes(conn: sqlite3.Connection) -> int | None:
    """Bytes the index takes in the database file (None where SQLite lacks dbstat)."""
    try:
        (size,) = conn.execute(
            "SELECT SUM(pgsize) FROM dbstat WHERE name LIKE 'memory%'"
        ).fetchone()
    except sqlite3.OperationalError:
        return None
    return int(size or 0)
