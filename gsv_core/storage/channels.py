"""Channels on disk: the account registry (and which accounts were running, so they start
again after a restart) and the inbound journal.

The journal is what makes "no inbound message is lost" true: an adapter's message is
stored here before the adapter is told it was received; its state then moves
`received` -> `dispatched` (it is in its session, under `run_id`) -> `answered` (the
reply went out) or `dropped` (refused by policy, a duplicate...). After a restart every
entry not yet answered or dropped is taken up again.

An account's call-time config (`channel.start` params) may carry its tokens: those go to
the secret store like the gateway config's (gsv_core.config.secrets), named
`channel.<channel>.<account>.<key>`; the row keeps markers.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from dataclasses import dataclass
from dataclasses import replace
from typing import Any

from gsv_core.config import secrets as secrets
from gsv_core.storage.db import Database
from gsv_core.storage.secret_store import LocalSecretStore
from gsv_core.storage.secret_store import SecretStore

log = logging.getLogger(__name__)

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


_JOURNAL_COLUMNS = "id, channel, account_id, message_id, payload, state, run_id, session_key"


def _journal_entry(row: tuple[Any, ...]) -> JournalEntry:
    return JournalEntry(row[0], row[1], row[2], row[3], json.loads(row[4]), *row[5:])


def secret_names(channel: str, account_id: str) -> secrets.NameOf:
    """Store names for the secrets of one account's call-time config."""
    prefix = f"channel.{_name_part(channel)}.{_name_part(account_id)}"
    return lambda path: f"{prefix}.{path}"


def _name_part(text: str) -> str:
    return text.replace("%", "%25").replace(".", "%2E")  # names are dotted


class ChannelStore:
    def __init__(self, db: Database, vault: SecretStore | None = None) -> None:
        self._db = db
        self._vault = vault or LocalSecretStore()
        # call-time secrets by store name, read from the store once (it may block)
        self._secrets: dict[str, str] = {}

    # -- accounts -----------------------------------------------------------------------
    async def accounts(self) -> list[AccountRecord]:
        return [await self._with_secrets(record) for record in await self._stored_accounts()]

    async def _stored_accounts(self) -> list[AccountRecord]:
        return await self._db.select(
            lambda r: AccountRecord(r[0], r[1], bool(r[2]), json.loads(r[3]), r[4], r[5]),
            "SELECT channel, account_id, running, config, connected_at, last_message_at "
            "FROM channel_accounts ORDER BY channel, account_id",
        )

    async def _with_secrets(self, record: AccountRecord) -> AccountRecord:
        name_of = secret_names(record.channel, record.account_id)
        names = secrets.referenced_names(record.config, name_of)
        if not names:
            return record
        unknown = [name for name in names if name not in self._secrets]
        if unknown:
            self._secrets.update(await asyncio.to_thread(self._vault.load, unknown))
        record.config, missing = secrets.join_secrets(record.config, self._secrets, name_of)
        for path in missing:
            log.warning("%s account %s: the secret of %s is missing from the secret store",
                        record.channel, record.account_id, path)  # fmt: skip
        return record

    async def save_account(self, record: AccountRecord) -> None:
        """Store the record; secrets of its config go to the secret store first, and
        those its previous config had and this one has not are deleted after."""
        name_of = secret_names(record.channel, record.account_id)
        split = secrets.split_secrets(record.config, name_of)
        before = await self._stored_names(record.channel, record.account_id)
        written = {n: v for n, v in split.secrets.items() if self._secrets.get(n) != v}
        if written:
            await asyncio.to_thread(self._vault.save, written)
            self._secrets.update(written)
        stored = replace(record, config=split.stored)
        await self._save_row(stored)
        await self._forget([name for name in before if name not in split.secrets])

    async def _stored_names(self, channel: str, account_id: str) -> list[str]:
        for record in await self._stored_accounts():
            if (record.channel, record.account_id) == (channel, account_id):
                return list(secrets.referenced_names(record.config, secret_names(*_ids(record))))
        return []

    async def _forget(self, names: list[str]) -> None:
        if names:
            await asyncio.to_thread(self._vault.delete, names)
            for name in names:
                self._secrets.pop(name, None)

    async def move_plaintext_secrets(self) -> int:
        """Move tokens an older gsv stored in plain text in account rows to the secret
        store, scrub the database file; returns how many moved."""
        moved = 0
        for record in await self._stored_accounts():
            split = secrets.split_secrets(record.config, secret_names(*_ids(record)))
            if split.secrets:
                await asyncio.to_thread(self._vault.save, split.secrets)
                await self._save_row(replace(record, config=split.stored))
                moved += len(split.secrets)
        if moved:
            await self._db.scrub()
            log.info("moved %d plain-text channel account secret(s) to the secret store", moved)
        return moved

    async def _save_row(self, record: AccountRecord) -> None:
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
        names = await self._stored_names(channel, account_id)
        await self._db.execute(
            "DELETE FROM channel_accounts WHERE channel = ? AND account_id = ?",
            (channel, account_id),
        )
        await self._forget(names)

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

        marks = ", ".join("?" * len(OPEN_STATES))
        return await self._db.select(
            _journal_entry,
            f"SELECT {_JOURNAL_COLUMNS} FROM inbound_journal WHERE state IN ({marks}) ORDER BY id",
            OPEN_STATES,
        )

    async def entry(self, entry_id: int) -> JournalEntry | None:
        return await self._db.select_one(
            _journal_entry,
            f"SELECT {_JOURNAL_COLUMNS} FROM inbound_journal WHERE id = ?",
            (entry_id,),
        )

    async def prune(self, before: int) -> int:
        """Forget closed entries older than `before` (epoch ms); returns how many."""

        def write(conn: sqlite3.Connection) -> int:
            return conn.execute(
                "DELETE FROM inbound_journal WHERE state IN (?, ?) AND updated_at < ?",
                (ANSWERED, DROPPED, before),
            ).rowcount

        return await self._db.write(write)


def _ids(record: AccountRecord) -> tuple[str, str]:
    return record.channel, record.account_id
