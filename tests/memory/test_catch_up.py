"""Stored messages are indexed by a catch-up write after the one that stored them
(gsv_core/memory/index.py): the index follows by itself, a reader finds what was sent
before it, a crash in between loses nothing, and a cleared history is never indexed."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from gsv_core.memory import index as ix
from gsv_core.memory.query import query_terms
from gsv_core.memory.search import MemoryScope
from gsv_core.memory.search import SearchRequest
from gsv_core.memory.service import MemoryService
from gsv_core.storage.db import Database
from gsv_core.storage.db import _open
from gsv_core.storage.db import migrate
from gsv_core.storage.sessions import SessionRecord
from gsv_core.workspace.backend import FilesystemBackend
from tests.memory.conftest import Memory
from tests.memory.conftest import message
from tests.waiting import until

KEY = "agent:main:main"


def _count(conn: sqlite3.Connection, table: str) -> int:
    return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


async def _counts(db: Database) -> tuple[int, int]:
    """(indexed rows, messages waiting to be indexed)."""
    return await db.read(lambda c: (_count(c, "memory_docs"), _count(c, "memory_pending")))


async def _found(memory: Memory, words: str) -> list[tuple[str, int]]:
    """(session, message index) of each hit."""
    request = SearchRequest(query_terms(words), limit=20)
    hits = await memory.service.search(request, MemoryScope.everything())
    return [(hit["sessionKey"], hit["messageIndex"]) for hit in hits]


async def test_the_index_follows_without_a_reader(memory: Memory) -> None:
    """No search asks: the writer's catch-up indexes the message once writes pause."""
    await memory.say(KEY, "the spare key is under the mat")
    await until(lambda: not memory.service.index.pending, "the catch-up write")
    assert await _counts(memory.db) == (1, 0)


async def test_a_search_right_after_the_store_finds_the_message(memory: Memory) -> None:
    for n in range(20):
        await memory.say(f"agent:main:s{n}", f"parcel number {n} arrived")
        assert (f"agent:main:s{n}", 0) in await _found(memory, f"parcel {n}")
    assert await _counts(memory.db) == (20, 0)


async def test_tool_results_leave_nothing_waiting(memory: Memory) -> None:
    record = SessionRecord(KEY, "sid", "main", "main", 0, 0, 0)
    result = {"role": "toolResult", "toolCallId": "c1", "toolName": "Bash",
              "content": [{"type": "text", "text": "ls output"}], "isError": False}  # fmt: skip
    await memory.store.append(record, [result])
    assert await memory.db.read(lambda c: _count(c, "memory_pending")) == 0
    assert await _found(memory, "output") == []


def _put(conn: sqlite3.Connection, index: ix.MemoryIndex, idx: int, text: str) -> None:
    """Store one message as the session store does, noting it for the index."""
    stored = message("user", text)
    conn.execute(
        "INSERT INTO messages (session_key, idx, data) VALUES (?, ?, ?)",
        (KEY, idx, json.dumps(stored)),
    )
    index.appended(conn, KEY, idx, [stored])


def _store_without_indexing(path: Path, texts: list[str]) -> None:
    """What a gateway killed between the two writes leaves: the messages stored and
    noted as waiting, nothing indexed."""
    conn = _open(path)
    migrate(conn)
    index = ix.MemoryIndex()
    with conn:
        for idx, text in enumerate(texts):
            _put(conn, index, idx, text)
    conn.close()


async def test_a_crash_between_store_and_index_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "gsv.db"
    _store_without_indexing(path, ["the boiler code is 4711", "call the plumber friday"])
    db = await Database.open(path)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    service = MemoryService(db, FilesystemBackend(workspace))
    try:
        assert await _counts(db) == (0, 2)  # nothing was indexed before the search
        request = SearchRequest(query_terms("boiler plumber"), limit=20)
        found = await service.search(request, MemoryScope.everything())
        counts = await _counts(db)
    finally:
        await service.close()
        await db.close()
    assert sorted((hit["sessionKey"], hit["messageIndex"]) for hit in found) == [(KEY, 0), (KEY, 1)]
    assert counts == (2, 0)


def test_a_cleared_history_is_not_indexed_after_the_fact(tmp_path: Path) -> None:
    """A reset between the store and the catch-up: the old message is gone, the new one is
    indexed once."""
    conn = _open(tmp_path / "gsv.db")
    migrate(conn)
    index = ix.MemoryIndex()
    with conn:
        _put(conn, index, 0, "old secret plan")
        conn.execute("DELETE FROM messages WHERE session_key = ?", (KEY,))
        index.cleared(conn, KEY)
        _put(conn, index, 0, "new public plan")
        seen = index.catch_up(conn)
    texts = [row[0] for row in conn.execute("SELECT text FROM memory_docs")]
    (secret,) = conn.execute(
        "SELECT COUNT(*) FROM memory_fts WHERE memory_fts MATCH 'secret'"
    ).fetchone()
    (public,) = conn.execute(
        "SELECT COUNT(*) FROM memory_fts WHERE memory_fts MATCH 'public'"
    ).fetchone()
    conn.close()
    assert texts == ["new public plan"]
    assert (secret, public) == (0, 1)
    assert index.pending  # until the catch-up's commit is told
    index.committed(seen)
    assert not index.pending


async def test_a_rebuild_indexes_a_waiting_message_once(memory: Memory) -> None:
    await memory.say(KEY, "the garage opener battery")
    await memory.service.reindex()  # wipes, then builds from the stored history
    await memory.service.wait_built()
    assert await _found(memory, "garage") == [(KEY, 0)]
    assert await _counts(memory.db) == (1, 0)


def test_a_catch_up_counts_only_once_committed_and_not_what_came_after(tmp_path: Path) -> None:
    """A reader asks `pending` to decide whether to catch up first: it must stay true
    until the catch-up that indexed a message committed, and again for a later one."""
    conn = _open(tmp_path / "gsv.db")
    migrate(conn)
    index = ix.MemoryIndex()
    with conn:
        first = index.catch_up(conn)  # what a crash may have left: nothing here
    index.committed(first)
    assert not index.pending
    with conn:
        _put(conn, index, 0, "first message")
        seen = index.catch_up(conn)
        assert index.pending  # indexed, not committed yet
        _put(conn, index, 1, "second message")  # after the catch-up read what waited
    index.committed(seen)
    assert index.pending  # the second still waits
    with conn:
        index.committed(index.catch_up(conn))
    conn.close()
    assert not index.pending
