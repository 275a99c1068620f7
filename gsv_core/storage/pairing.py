"""Pending pairing requests: senders who wrote to the agent and wait for the owner's
approval, one row per channel and sender."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from gsv_core.storage.db import Database


@dataclass
class PairRequest:
    channel: str
    sender_id: str
    sender_name: str | None
    peer: dict[str, Any]
    account_id: str
    first_message: str
    requested_at: int
    last_seen_at: int
    attempts: int


_COLUMNS = (
    "channel, sender_id, sender_name, peer, account_id, first_message, requested_at, "
    "last_seen_at, attempts"
)


def _request(row: tuple[Any, ...]) -> PairRequest:
    return PairRequest(row[0], row[1], row[2], json.loads(row[3]), *row[4:])


class PairingStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, channel: str, sender_id: str) -> PairRequest | None:
        return await self._db.select_one(
            _request,
            f"SELECT {_COLUMNS} FROM pairing_requests WHERE channel = ? AND sender_id = ?",
            (channel, sender_id),
        )

    async def list(self) -> list[PairRequest]:
        return await self._db.select(
            _request, f"SELECT {_COLUMNS} FROM pairing_requests ORDER BY requested_at"
        )

    async def save(self, request: PairRequest) -> None:
        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                f"INSERT OR REPLACE INTO pairing_requests ({_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (request.channel, request.sender_id, request.sender_name, json.dumps(request.peer),
                 request.account_id, request.first_message, request.requested_at,
                 request.last_seen_at, request.attempts),
            )  # fmt: skip

        await self._db.write(write)

    async def delete(self, channel: str, sender_id: str) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            return (
                conn.execute(
                    "DELETE FROM pairing_requests WHERE channel = ? AND sender_id = ?",
                    (channel, sender_id),
                ).rowcount
                > 0
            )

        return await self._db.write(write)

    async def expire(self, before: int) -> int:
        def write(conn: sqlite3.Connection) -> int:
            return conn.execute(
                "DELETE FROM pairing_requests WHERE requested_at < ?", (before,)
            ).rowcount

        return await self._db.write(write)
