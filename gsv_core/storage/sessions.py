"""Sessions on disk: the session row, its message history, its queue of waiting messages
and its open run.

Every change that acknowledges something to a user is one transaction: a message that
starts a run is stored together with the run's row; a message that waits is stored in the
queue; taking the next queued message moves it into the history and opens its run at
once. After a crash, open runs are the runs the gateway was in the middle of, and the
queue still holds every waiting message.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from collections.abc import Collection
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import Protocol

from gsv_core.protocol.messages import Usage
from gsv_core.protocol.messages import empty_usage
from gsv_core.storage.batched import BatchedLookup
from gsv_core.storage.db import Database

_SESSION_COLUMNS = (
    "session_key, session_id, agent_id, kind, created_at, updated_at, last_active_at, label, "
    "settings, reset_policy, last_reset_at, previous_session_ids, usage, last_input_tokens, "
    "pending_overrides, compaction_count, last_compacted_at"
)


@dataclass
class SessionRecord:
    session_key: str
    session_id: str
    agent_id: str
    kind: str
    created_at: int
    updated_at: int
    last_active_at: int
    label: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    reset_policy: dict[str, Any] | None = None
    last_reset_at: int | None = None
    previous_session_ids: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=empty_usage)
    last_input_tokens: int | None = None
    pending_overrides: dict[str, Any] | None = None
    compaction_count: int = 0
    last_compacted_at: int | None = None

    def list_entry(self) -> dict[str, Any]:
        """What every listing of sessions shows of one (`sessions.list`, gsv__SessionsList)."""
        return {"sessionKey": self.session_key, "kind": self.kind,
                "createdAt": self.created_at, "lastActiveAt": self.last_active_at}  # fmt: skip

    def row(self) -> tuple[Any, ...]:
        return (
            self.session_key, self.session_id, self.agent_id, self.kind, self.created_at,
            self.updated_at, self.last_active_at, self.label, json.dumps(self.settings),
            _dumps_or_none(self.reset_policy), self.last_reset_at,
            json.dumps(self.previous_session_ids), json.dumps(self.usage),
            self.last_input_tokens, _dumps_or_none(self.pending_overrides),
            self.compaction_count, self.last_compacted_at,
        )  # fmt: skip


def _dumps_or_none(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def _loads_or_none(value: str | None) -> Any:
    return None if value is None else json.loads(value)


def _record(row: tuple[Any, ...]) -> SessionRecord:
    return SessionRecord(
        session_key=row[0], session_id=row[1], agent_id=row[2], kind=row[3],
        created_at=row[4], updated_at=row[5], last_active_at=row[6], label=row[7],
        settings=json.loads(row[8]), reset_policy=_loads_or_none(row[9]),
        last_reset_at=row[10], previous_session_ids=json.loads(row[11]),
        usage={**empty_usage(), **json.loads(row[12])}, last_input_tokens=row[13],
        pending_overrides=_loads_or_none(row[14]), compaction_count=row[15],
        last_compacted_at=row[16],
    )  # fmt: skip


@dataclass
class QueuedItem:
    seq: int
    run_id: str
    item: dict[str, Any]  # {"message": <stored user message>, "overrides"?, "context"?}
    queued_at: int


# saved on every write of a turn: an upsert changes the row in place, where INSERT OR
# REPLACE deleted and re-inserted it (and its index entries), which cost about as much as
# the rest of the write
_COLUMN_NAMES = [name.strip() for name in _SESSION_COLUMNS.split(",")]
_SAVE_SESSION = (
    f"INSERT INTO sessions ({_SESSION_COLUMNS}) VALUES ({', '.join('?' * len(_COLUMN_NAMES))}) "
    "ON CONFLICT (session_key) DO UPDATE SET "
    + ", ".join(f"{name} = excluded.{name}" for name in _COLUMN_NAMES if name != "session_key")
)


def _save_session(conn: sqlite3.Connection, record: SessionRecord) -> None:
    conn.execute(_SAVE_SESSION, record.row())


class HistoryIndex(Protocol):
    """What keeps a search index of histories current (gsv_core/memory/index.py), called
    in the writer thread inside the transaction that changes the history."""

    def appended(
        self, conn: sqlite3.Connection, key: str, first_idx: int, messages: list[dict[str, Any]]
    ) -> None: ...

    def cleared(self, conn: sqlite3.Connection, key: str) -> None:
        """The live history of `key` was deleted (what was archived is kept)."""
        ...


def _append(conn: sqlite3.Connection, key: str, messages: list[dict[str, Any]]) -> int:
    """Append to the history; the index of the first appended message."""
    (last,) = conn.execute(
        "SELECT COALESCE(MAX(idx), -1) FROM messages WHERE session_key = ?", (key,)
    ).fetchone()
    conn.executemany(
        "INSERT INTO messages (session_key, idx, data) VALUES (?, ?, ?)",
        [(key, last + 1 + i, json.dumps(m, ensure_ascii=False)) for i, m in enumerate(messages)],
    )
    return int(last) + 1


def run_closer(run_id: str) -> Callable[[sqlite3.Connection], None]:
    """A write closing run `run_id` (its row dropped), for a run's final reply to take
    into its own transaction (`SessionStore.append`'s `also`): the run then ends without
    a write of its own (`finish_run`)."""

    def close(conn: sqlite3.Connection) -> None:
        conn.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))

    return close


# a session somebody used: it holds messages, was reset, labelled, given settings, or
# changed since its row was made (a first session.get only reserves the row, fixing the
# id: agent/manager.py)
_IN_USE = (
    "(updated_at > created_at OR previous_session_ids != '[]' OR label IS NOT NULL "
    "OR settings != '{}' OR EXISTS "
    "(SELECT 1 FROM messages WHERE messages.session_key = sessions.session_key))"
)


# a session nobody touched since `:before` (epoch ms), its last message (a run's reply)
# included, and nothing waits in: no open run, no queued message
_STALE = (
    "last_active_at < :before AND updated_at < :before AND COALESCE((SELECT "
    "json_extract(data, '$.timestamp') FROM messages WHERE messages.session_key = "
    "sessions.session_key ORDER BY idx DESC LIMIT 1), 0) < :before "
    "AND NOT EXISTS (SELECT 1 FROM runs WHERE runs.session_key = sessions.session_key) "
    "AND NOT EXISTS (SELECT 1 FROM queue WHERE queue.session_key = sessions.session_key)"
)


class SessionStore:
    def __init__(self, db: Database, index: HistoryIndex | None = None) -> None:
        self._db = db
        self.index = index  # set by the gateway; None: histories are not indexed
        # the lookups of one pass of the loop read in one query (storage/batched.py)
        self._rows: BatchedLookup[tuple[Any, ...]] = BatchedLookup(self._session_rows)

    def _append(self, conn: sqlite3.Connection, key: str, messages: list[dict[str, Any]]) -> None:
        first = _append(conn, key, messages)
        if self.index is not None and messages:
            self.index.appended(conn, key, first, messages)

    def _clear(self, conn: sqlite3.Connection, key: str) -> None:
        """Delete the history of `key`, and its live rows in the index."""
        conn.execute("DELETE FROM messages WHERE session_key = ?", (key,))
        if self.index is not None:
            self.index.cleared(conn, key)

    # -- reads --------------------------------------------------------------------------
    async def get(self, key: str) -> SessionRecord | None:
        row = await self._rows.get(key)
        return _record(row) if row is not None else None  # each caller its own record

    async def _session_rows(self, keys: list[str]) -> dict[str, tuple[Any, ...]]:
        marks = ", ".join("?" * len(keys))
        rows = await self._db.select(
            tuple, f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE session_key IN ({marks})", keys
        )
        return {row[0]: row for row in rows}

    async def messages(self, key: str, limit: int | None = None) -> list[dict[str, Any]]:
        """The history in order; with `limit`, only the last `limit` messages."""

        def read(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            if limit is None:
                rows = conn.execute(
                    "SELECT data FROM messages WHERE session_key = ? ORDER BY idx", (key,)
                ).fetchall()
            else:
                rows = conn.execute(
                    "SELECT data FROM (SELECT idx, data FROM messages WHERE session_key = ? "
                    "ORDER BY idx DESC LIMIT ?) ORDER BY idx",
                    (key, limit),
                ).fetchall()
            return [json.loads(data) for (data,) in rows]

        return await self._db.read(read)

    async def message_count(self, key: str) -> int:
        def read(conn: sqlite3.Connection) -> int:
            (count,) = conn.execute(
                "SELECT COUNT(*) FROM messages WHERE session_key = ?", (key,)
            ).fetchone()
            return int(count)

        return await self._db.read(read)

    async def message_counts(self, keys: list[str]) -> dict[str, int]:
        def read(conn: sqlite3.Connection) -> dict[str, int]:
            if not keys:
                return {}
            marks = ", ".join("?" * len(keys))
            rows = conn.execute(
                f"SELECT session_key, COUNT(*) FROM messages WHERE session_key IN ({marks}) "
                "GROUP BY session_key",
                keys,
            ).fetchall()
            return {key: int(count) for key, count in rows}

        return await self._db.read(read)

    async def queue(self, key: str) -> list[QueuedItem]:
        return await self._db.select(
            lambda r: QueuedItem(r[0], r[1], json.loads(r[2]), r[3]),
            "SELECT seq, run_id, item, queued_at FROM queue WHERE session_key = ? ORDER BY seq",
            (key,),
        )

    async def list_sessions(self, offset: int, limit: int) -> tuple[list[SessionRecord], int]:
        """Sessions in use by last activity (newest first), and the total count. A row a
        read only reserved (its id fixed, nothing in it, never changed) is not listed."""

        def read(conn: sqlite3.Connection) -> tuple[list[SessionRecord], int]:
            rows = conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE {_IN_USE} "
                "ORDER BY last_active_at DESC, session_key LIMIT ? OFFSET ?",
                (limit, offset),
            ).fetchall()
            (total,) = conn.execute(f"SELECT COUNT(*) FROM sessions WHERE {_IN_USE}").fetchone()
            return [_record(r) for r in rows], int(total)

        return await self._db.read(read)

    async def recovery_state(self) -> tuple[list[tuple[str, str]], list[str]]:
        """(open runs as (run_id, session_key), session keys with queued messages)."""

        def read(conn: sqlite3.Connection) -> tuple[list[tuple[str, str]], list[str]]:
            runs = conn.execute(
                "SELECT run_id, session_key FROM runs ORDER BY started_at"
            ).fetchall()
            queued = conn.execute("SELECT DISTINCT session_key FROM queue").fetchall()
            return [(r[0], r[1]) for r in runs], [q[0] for q in queued]

        return await self._db.read(read)

    async def stale(self, kinds: Collection[str], before: int, limit: int) -> list[str]:
        """Up to `limit` sessions of `kinds` untouched since before `before` (epoch ms)
        with no open run and no waiting message, the longest untouched first."""
        named = {f"kind{n}": kind for n, kind in enumerate(kinds)}
        marks = ", ".join(f":{name}" for name in named)
        return await self._db.select(
            lambda row: str(row[0]),
            f"SELECT session_key FROM sessions WHERE kind IN ({marks}) AND {_STALE} "
            "ORDER BY last_active_at LIMIT :limit",
            {**named, "before": before, "limit": limit},
        )

    # -- writes -------------------------------------------------------------------------
    async def delete_stale(self, keys: list[str], before: int) -> list[str]:
        """Delete those of `keys` still untouched since before `before`, idle and unused
        (checked again in the deleting transaction): each session's row, messages and live
        memory-index rows. Returns the keys deleted."""

        def write(conn: sqlite3.Connection) -> list[str]:
            deleted = []
            for key in keys:
                gone = conn.execute(
                    f"DELETE FROM sessions WHERE session_key = :key AND {_STALE}",
                    {"key": key, "before": before},
                ).rowcount
                if gone:
                    self._clear(conn, key)
                    deleted.append(key)
            return deleted

        return await self._db.write(write)

    async def save(self, record: SessionRecord) -> None:
        await self._db.write(lambda conn: _save_session(conn, record))

    async def start_run(
        self, record: SessionRecord, run_id: str, message: dict[str, Any], now: int
    ) -> None:
        """Store the message that starts a run, the run's row and the session, at once."""

        def write(conn: sqlite3.Connection) -> None:
            _save_session(conn, record)
            self._append(conn, record.session_key, [message])
            conn.execute(
                "INSERT INTO runs (run_id, session_key, started_at) VALUES (?, ?, ?)",
                (run_id, record.session_key, now),
            )

        await self._db.write(write)

    async def enqueue(
        self, record: SessionRecord, run_id: str, item: dict[str, Any], now: int
    ) -> int:
        """Store a waiting message; returns its 1-based position in the queue."""

        def write(conn: sqlite3.Connection) -> int:
            _save_session(conn, record)
            conn.execute(
                "INSERT INTO queue (session_key, run_id, item, queued_at) VALUES (?, ?, ?, ?)",
                (record.session_key, run_id, json.dumps(item, ensure_ascii=False), now),
            )
            (count,) = conn.execute(
                "SELECT COUNT(*) FROM queue WHERE session_key = ?", (record.session_key,)
            ).fetchone()
            return int(count)

        return await self._db.write(write)

    async def take_queued(
        self, record: SessionRecord, seq: int, message: dict[str, Any] | None, now: int
    ) -> None:
        """Move queued item `seq` into the history as the start of its run (a resumed
        run has no message of its own)."""

        def write(conn: sqlite3.Connection) -> None:
            (run_id,) = conn.execute("SELECT run_id FROM queue WHERE seq = ?", (seq,)).fetchone()
            conn.execute("DELETE FROM queue WHERE seq = ?", (seq,))
            _save_session(conn, record)
            if message is not None:
                self._append(conn, record.session_key, [message])
            conn.execute(
                "INSERT INTO runs (run_id, session_key, started_at) VALUES (?, ?, ?)",
                (run_id, record.session_key, now),
            )

        await self._db.write(write)

    async def start_run_without_message(self, record: SessionRecord, run_id: str, now: int) -> None:
        """Open a run that continues the history (a resumed run)."""

        def write(conn: sqlite3.Connection) -> None:
            _save_session(conn, record)
            conn.execute(
                "INSERT INTO runs (run_id, session_key, started_at) VALUES (?, ?, ?)",
                (run_id, record.session_key, now),
            )

        await self._db.write(write)

    async def append(
        self,
        record: SessionRecord,
        messages: list[dict[str, Any]],
        also: Callable[[sqlite3.Connection], None] | None = None,
    ) -> None:
        """Append messages (assistant replies, tool results) and save the session row;
        `also` writes in the same transaction (the reply's usage-ledger row)."""

        def write(conn: sqlite3.Connection) -> None:
            _save_session(conn, record)
            self._append(conn, record.session_key, messages)
            if also is not None:
                also(conn)

        await self._db.write(write)

    async def finish_run(
        self, record: SessionRecord, run_id: str, messages: list[dict[str, Any]]
    ) -> None:
        """Close a run (appending any last messages) in one transaction."""

        def write(conn: sqlite3.Connection) -> None:
            _save_session(conn, record)
            if messages:
                self._append(conn, record.session_key, messages)
            conn.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))

        await self._db.write(write)

    async def replace_history(self, record: SessionRecord, messages: list[dict[str, Any]]) -> None:
        """Swap the whole history (reset: empty; compact: the kept part)."""

        def write(conn: sqlite3.Connection) -> None:
            _save_session(conn, record)
            self._clear(conn, record.session_key)
            self._append(conn, record.session_key, messages)

        await self._db.write(write)
