"""What writes the memory index, always in the database's writer thread: messages as the
session store appends or clears them (`MemoryIndex`, the store's `HistoryIndex`),
archives as they are written, note chunks as files change, and the pieces of a full
build.

Appended messages are indexed by a catch-up write (`Database.when_quiet`) right after
the one that stored them, not inside it: a crowd's acks wait on their messages' own
writes only (bench/crowd.py). The storing transaction notes them in `memory_pending`,
so a crash in between loses nothing, and every reader of the index catches up first
(`MemoryService.caught_up`): a search still finds a message once its send returned.

Rows live in `memory_docs`; `memory_fts` is an external-content FTS5 table over their
text, so every delete goes through FTS5's 'delete' command with the old text first.
A live message row has no `archive`; when its history is cleared (reset, compaction)
the row goes, and the archive written just before holds the same message as an
archived row, pointing at its archive file.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from gsv_core.memory.notes import chunks
from gsv_core.protocol.messages import text_of
from gsv_core.routing import agent_id_of

MESSAGE, NOTE = "message", "note"
INDEXED_ROLES = frozenset({"user", "assistant"})
MAX_TEXT_CHARS = 20_000  # of one message: the rest is rarely what a search wants
BUILT = "built"  # memory_state key: "1" once the full build finished
_COLUMNS = (
    "kind, agent_id, session_key, msg_idx, role, at, archive, path, line_start, line_end, text"
)
DocRow = tuple[str, str, str | None, int | None, str | None, int | None, str | None,
               str | None, int | None, int | None, str]  # fmt: skip


def message_rows(
    key: str, first_idx: int, messages: Sequence[dict[str, Any]], archive: str | None = None
) -> list[DocRow]:
    """Rows for the user and assistant messages with text (tool traffic is left out)."""
    agent = agent_id_of(key)
    rows: list[DocRow] = []
    for offset, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in INDEXED_ROLES:
            continue
        text = text_of(message).strip()
        if not text:
            continue
        at = message.get("timestamp")
        at = int(at) if isinstance(at, int | float) and not isinstance(at, bool) else None
        rows.append((MESSAGE, agent, key, first_idx + offset, role, at, archive,
                     None, None, None, text[:MAX_TEXT_CHARS]))  # fmt: skip
    return rows


def insert(conn: sqlite3.Connection, rows: Sequence[DocRow]) -> None:
    if not rows:
        return
    (last,) = conn.execute("SELECT COALESCE(MAX(id), 0) FROM memory_docs").fetchone()
    marks = ", ".join("?" * len(rows[0]))
    conn.executemany(f"INSERT INTO memory_docs ({_COLUMNS}) VALUES ({marks})", rows)
    conn.execute(
        "INSERT INTO memory_fts (rowid, text) SELECT id, text FROM memory_docs WHERE id > ?",
        (last,),
    )


def delete(conn: sqlite3.Connection, where: str, args: Sequence[Any]) -> None:
    conn.execute(
        "INSERT INTO memory_fts (memory_fts, rowid, text) "
        f"SELECT 'delete', id, text FROM memory_docs WHERE {where}",
        args,
    )
    # ids are reused once the last rows go: a vector must never outlive its piece
    conn.execute(
        f"DELETE FROM memory_vectors WHERE doc_id IN (SELECT id FROM memory_docs WHERE {where})",
        args,
    )
    conn.execute(f"DELETE FROM memory_docs WHERE {where}", args)


_LIVE = "kind = 'message' AND session_key = ? AND archive IS NULL"


class MemoryIndex:
    """Keeps the live history rows current (gsv_core.storage.sessions.HistoryIndex)."""

    def __init__(self) -> None:
        # appends noted in memory_pending (counted in the writer thread, in the storing
        # transaction) and how many of them a committed catch-up had seen: messages may
        # wait while the two differ. One at first: a crash may have left some.
        self._noted = 1
        self._indexed = 0

    @property
    def pending(self) -> bool:
        """Messages may wait to be indexed (a catch-up runs only then)."""
        return self._noted != self._indexed

    def is_pending(self) -> bool:
        return self.pending

    def committed(self, seen: int) -> None:
        """The catch-up that returned `seen` committed: what was noted before it is
        indexed. Only then, so a reader never skips a catch-up not yet committed."""
        self._indexed = max(self._indexed, seen)

    def appended(
        self, conn: sqlite3.Connection, key: str, first_idx: int, messages: list[dict[str, Any]]
    ) -> None:
        if not any(message.get("role") in INDEXED_ROLES for message in messages):
            return  # tool results: nothing to index
        conn.execute(
            "INSERT INTO memory_pending (session_key, first_idx, count) VALUES (?, ?, ?)",
            (key, first_idx, len(messages)),
        )
        self._noted += 1

    def cleared(self, conn: sqlite3.Connection, key: str) -> None:
        delete(conn, _LIVE, (key,))
        _forget_pending(conn, key)  # those messages are gone too

    def catch_up(self, conn: sqlite3.Connection) -> int:
        """Index every message waiting in memory_pending (the catch-up write); returns
        the count to hand to `committed` once it committed."""
        seen = self._noted  # appends run in this thread too: none comes in between
        waiting = conn.execute(
            "SELECT rowid, session_key, first_idx, count FROM memory_pending ORDER BY rowid"
        ).fetchall()
        found: list[DocRow] = []
        for _, key, first, count in waiting:
            rows = conn.execute(
                "SELECT idx, data FROM messages WHERE session_key = ? AND idx >= ? AND idx < ? "
                "ORDER BY idx",
                (key, first, first + count),
            ).fetchall()
            for idx, data in rows:
                found += message_rows(key, idx, [json.loads(data)])
        insert(conn, found)
        if waiting:
            conn.execute("DELETE FROM memory_pending WHERE rowid <= ?", (waiting[-1][0],))
        return seen


def _forget_pending(conn: sqlite3.Connection, key: str) -> None:
    conn.execute("DELETE FROM memory_pending WHERE session_key = ?", (key,))


def index_session(conn: sqlite3.Connection, key: str) -> None:
    """Index a session's live history afresh (the build; idempotent)."""
    delete(conn, _LIVE, (key,))
    _forget_pending(conn, key)  # indexed here, all of it
    rows = conn.execute(
        "SELECT idx, data FROM messages WHERE session_key = ? ORDER BY idx", (key,)
    ).fetchall()
    found: list[DocRow] = []
    for idx, data in rows:
        found += message_rows(key, idx, [json.loads(data)])
    insert(conn, found)


def index_sessions(conn: sqlite3.Connection, keys: Sequence[str]) -> None:
    for key in keys:
        index_session(conn, key)


def index_archive(
    conn: sqlite3.Connection,
    agent_id: str,
    path: str,
    meta: dict[str, Any],
    messages: Sequence[dict[str, Any]],
) -> bool:
    """Index an archive's messages once (`path` relative to the agent's folder); False
    when it was indexed before."""
    seen = conn.execute(
        "SELECT 1 FROM memory_archives WHERE agent_id = ? AND path = ?", (agent_id, path)
    ).fetchone()
    if seen:
        return False
    key = str(meta.get("sessionKey") or f"agent:{agent_id}:archive")
    insert(conn, message_rows(key, 0, messages, archive=path))
    conn.execute("INSERT INTO memory_archives (agent_id, path) VALUES (?, ?)", (agent_id, path))
    return True


def first_archived_ref(conn: sqlite3.Connection, agent_id: str, archive: str) -> str | None:
    (first,) = conn.execute(
        "SELECT MIN(id) FROM memory_docs WHERE kind = 'message' AND agent_id = ? AND archive = ?",
        (agent_id, archive),
    ).fetchone()
    return None if first is None else f"m:{first}"


def replace_note(
    conn: sqlite3.Connection,
    agent_id: str,
    path: str,
    stat: tuple[int, int] | None,
    text: str | None,
) -> None:
    """Index a note's chunks afresh, with its (mtime_ns, size); a None text: it is gone."""
    delete(conn, "kind = 'note' AND agent_id = ? AND path = ?", (agent_id, path))
    if text is None or stat is None:
        conn.execute("DELETE FROM memory_files WHERE agent_id = ? AND path = ?", (agent_id, path))
        return
    at = stat[0] // 1_000_000
    insert(conn, [(NOTE, agent_id, None, None, None, at, None, path, c.line_start, c.line_end,
                   c.text) for c in chunks(text)])  # fmt: skip
    conn.execute(
        "INSERT OR REPLACE INTO memory_files (agent_id, path, mtime_ns, size) VALUES (?, ?, ?, ?)",
        (agent_id, path, stat[0], stat[1]),
    )


def note_stats(conn: sqlite3.Connection) -> dict[tuple[str, str], tuple[int, int]]:
    """(agent, path) -> (mtime_ns, size) of every note as last indexed."""
    rows = conn.execute("SELECT agent_id, path, mtime_ns, size FROM memory_files").fetchall()
    return {(a, p): (m, s) for a, p, m, s in rows}


def wipe(conn: sqlite3.Connection) -> None:
    """Forget everything indexed (a rebuild follows)."""
    conn.execute("DELETE FROM memory_docs")
    conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('delete-all')")
    for table in (
        "memory_vectors",
        "memory_files",
        "memory_archives",
        "memory_state",
        "memory_pending",
    ):
        conn.execute(f"DELETE FROM {table}")


def get_state(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM memory_state WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def set_state(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute("INSERT OR REPLACE INTO memory_state (key, value) VALUES (?, ?)", (key, value))
