"""Channels on disk: the account registry (and which accounts were running, so they start
again after a restart) and the inbound journal.

The journal is what makes "no inbound message is lost" true: an adapter's message is
stored here before the adapter is told it was received; its state then moves
`received` -> `dispatched` (it is in its session, under `run_id`) -> `answered` (the
reply went out) or `dropped` (refused by policy, a duplicate...). After a restart every
entry not yet answered or dropped is taken up again.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from gsv_core.storage.db import Database

RECEIVED = "received"
DISPATCHED = "dispatched"
ANSWERED = "answered"
DROPPED = "dropped"
OPEN_STATES = (RECEIVED, DISPATCHED)


@dataclass
class AccountRecord:
    channel: str
    account_id: str
    running: bool
    config: dict[str, Any]
    connected_at: int | None
    last_message_at: int | None


@dataclass
class JournalEntry:
    id: int
    channel: str
    account_id: str
    message_id: str
    payload: dict[str, Any]
    state: str
    run_id: str | None
    session_key: str | None


class ChannelStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    # -- accounts -----------------------------------------------------------------------
    async def accounts(self) -> list[AccountRecord]:
        def read(conn: sqlite3.Connection) -> list[AccountRecord]:
            rows = conn.execute(
                "SELECT channel, account_id, running, config, connected_at, last_message_at "
                "FROM channel_accounts ORDER BY channel, account_id"
            ).fetchall()
            return [
                AccountRecord(r[0], r[1], bool(r[2]), json.loads(r[3]), r[4], r[5]) for r in rows
            ]

        return await self._db.read(read)

    async def save_account(self, record: AccountRecord) -> None:
        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO channel_accounts (channel, account_id, running, config, connected_at, "
                "last_message_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(channel, account_id) DO "
                "UPDATE SET running = excluded.running, config = excluded.config, "
                "connected_at = excluded.connected_at, last_message_at = excluded.last_message_at",
                (record.channel, record.account_id, int(record.running), json.dumps(record.config),
                 record.connected_at, record.last_message_at),
            )  # fmt: skip

        await self._db.write(write)

    async def delete_account(self, channel: str, account_id: str) -> None:
        await self._db.write(
            lambda conn: conn.execute(
                "DELETE FROM channel_accounts WHERE channel = ? AND account_id = ?",
                (channel, account_id),
            )
        )

    # -- journal ------------------------------------------------------------------------
    async def record(
        self, channel: str, account_id: str, message_id: str, payload: dict[str, Any], now: int
    ) -> tuple[int, bool]:
        """Store an inbound message once; (entry id, whether it is new)."""

        def write(conn: sqlite3.Connection) -> tuple[int, bool]:
            cursor = conn.execute(
                "INSERT OR IGNORE INTO inbound_journal (channel, account_id, message_id, payload, "
                "state, received_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (channel, account_id, message_id, json.dumps(payload, ensure_ascii=False),
                 RECEIVED, now, now),
            )  # fmt: skip
            if cursor.rowcount:
                return int(cursor.lastrowid or 0), True
            (entry_id,) = conn.execute(
                "SELECT id FROM inbound_journal "
                "WHERE channel = ? AND account_id = ? AND message_id = ?",
                (channel, account_id, message_id),
            ).fetchone()
            return int(entry_id), False

        return await self._db.write(write)

    async def mark(
        self,
        entry_id: int,
        state: str,
        now: int,
        run_id: str | None = None,
        session_key: str | None = None,
    ) -> None:
        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE inbound_journal SET state = ?, updated_at = ?, "
                "run_id = COALESCE(?, run_id), session_key = COALESCE(?, session_key) WHERE id = ?",
                (state, now, run_id, session_key, entry_id),
            )

        await self._db.write(write)

    async def open_entries(self) -> list[JournalEntry]:
        """Entries not yet answered or dropped, oldest first."""

        def read(conn: sqlite3.Connection) -> list[JournalEntry]:
            marks = ", ".join("?" * len(OPEN_STATES))
            rows = conn.execute(
                "SELECT id, channel, account_id, message_id, payload, state, run_id, session_key "
                f"FROM inbound_journal WHERE state IN ({marks}) ORDER BY id",
                OPEN_STATES,
            ).fetchall()
            return [
                JournalEntry(r[0], r[1], r[2], r[3], json.loads(r[4]), r[5], r[6], r[7])
                for r in rows
            ]

        return await self._db.read(read)

    async def entry(self, entry_id: int) -> JournalEntry | None:
        def read(conn: sqlite3.Connection) -> JournalEntry | None:
            row = conn.execute(
                "SELECT id, channel, account_id, message_id, payload, state, run_id, session_key "
                "FROM inbound_journal WHERE id = ?",
                (entry_id,),
            ).fetchone()
            return (
                JournalEntry(row[0], row[1], row[2], row[3], json.loads(row[4]), *row[5:])
                if row
                else None
            )

        return await self._db.read(read)

    async def prune(self, before: int) -> int:
        """Forget closed entries older than `before` (epoch ms); returns how many."""

        def write(conn: sqlite3.Connection) -> int:
            return conn.execute(
                "DELETE FROM inbound_journal WHERE state IN (?, ?) AND updated_at < ?",
                (ANSWERED, DROPPED, before),
            ).rowcount

        return await self._db.write(write)
