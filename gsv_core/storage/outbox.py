"""Replies to channels that are not delivered yet (the durable outbox): one row per
platform message, oldest first per account, deleted once the platform took it or once it
is too old. What the rows mean and how they are retried: gsv_core.channels.reply_queue."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from gsv_core.storage.channels import ANSWERED
from gsv_core.storage.db import Database

Answer = tuple[int, str | None]  # (inbound journal entry id, the run answering it)

_COLUMNS = (
    "id, channel, account_id, peer, text, reply_to, session_key, created_at, attempts, "
    "next_attempt_at, last_error"
)


@dataclass(frozen=True)
class NewReply:
    """One platform message to send: a piece of a reply, already split to fit."""

    channel: str
    account_id: str
    peer: dict[str, Any]
    text: str
    reply_to: str | None = None
    session_key: str = ""


@dataclass(frozen=True)
class StoredReply:
    id: int
    reply: NewReply
    created_at: int
    attempts: int
    next_attempt_at: int
    last_error: str | None


@dataclass(frozen=True)
class QueueSummary:
    """What waits for one account (`gsv channels status`)."""

    channel: str
    account_id: str
    count: int
    oldest_at: int
    next_attempt_at: int
    last_error: str | None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"count": self.count, "oldestAt": self.oldest_at,
                                "nextAttemptAt": self.next_attempt_at}  # fmt: skip
        if self.last_error:
            wire["lastError"] = self.last_error
        return wire


def _mark_answered(conn: sqlite3.Connection, answers: Answer, now: int) -> bool:
    """Mark a journal entry answered by a run; False if that run had answered it already
    (another run answering the same message, such as a background command's completion,
    is a new reply)."""
    entry_id, run_id = answers
    return bool(
        conn.execute(
            "UPDATE inbound_journal SET state = ?, updated_at = ? "
            "WHERE id = ? AND NOT (state = ? AND run_id IS ?)",
            (ANSWERED, now, entry_id, ANSWERED, run_id),
        ).rowcount
    )


def _stored(row: tuple[Any, ...]) -> StoredReply:
    reply = NewReply(row[1], row[2], json.loads(row[3]), row[4], row[5], row[6])
    return StoredReply(row[0], reply, row[7], row[8], row[9], row[10])


class OutboxStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, replies: list[NewReply], now: int, answers: Answer | None = None) -> bool:
        """Keep replies to send; `answers`: (inbound journal entry, run id) of a run's
        final reply, the entry marked answered in the same transaction, unless this run
        answered it already (the restart's replay and the run itself may both offer the
        final reply: it is kept once). Returns whether the replies were kept."""

        def write(conn: sqlite3.Connection) -> bool:
            if answers is not None and not _mark_answered(conn, answers, now):
                return False
            conn.executemany(
                "INSERT INTO channel_outbox (channel, account_id, peer, text, reply_to, "
                "session_key, created_at, next_attempt_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(r.channel, r.account_id, json.dumps(r.peer, ensure_ascii=False), r.text,
                  r.reply_to, r.session_key, now, now) for r in replies],
            )  # fmt: skip
            return True

        return await self._db.write(write)

    async def pending(self, channel: str, account_id: str) -> list[StoredReply]:
        """One account's replies, oldest first."""

        return await self._db.select(
            _stored,
            f"SELECT {_COLUMNS} FROM channel_outbox WHERE channel = ? AND account_id = ? "
            "ORDER BY id",
            (channel, account_id),
        )

    async def summary(self) -> list[QueueSummary]:
        """Per account with replies waiting: how many, since when, the next try."""

        # the next try and the last error are the head's: the rest wait behind it
        return await self._db.select(
            lambda row: QueueSummary(*row),
            "SELECT q.channel, q.account_id, COUNT(*), MIN(q.created_at), "
            "head.next_attempt_at, head.last_error FROM channel_outbox AS q "
            "JOIN channel_outbox AS head ON head.id = (SELECT MIN(id) FROM channel_outbox "
            "WHERE channel = q.channel AND account_id = q.account_id) "
            "GROUP BY q.channel, q.account_id ORDER BY q.channel, q.account_id",
        )

    async def delete(self, reply_id: int) -> None:
        await self._db.execute("DELETE FROM channel_outbox WHERE id = ?", (reply_id,))

    async def postpone(self, reply_id: int, until: int, error: str) -> None:
        """A try failed: count it, keep why, try again at `until` (epoch ms)."""
        await self._db.execute(
            "UPDATE channel_outbox SET attempts = attempts + 1, next_attempt_at = ?, "
            "last_error = ? WHERE id = ?",
            (until, error, reply_id),
        )

    async def due_now(self, channel: str, account_id: str, now: int) -> None:
        """The account is back: its replies are due at once, whatever their backoff."""
        await self._db.execute(
            "UPDATE channel_outbox SET next_attempt_at = MIN(next_attempt_at, ?) "
            "WHERE channel = ? AND account_id = ?",
            (now, channel, account_id),
        )
