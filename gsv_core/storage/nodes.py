"""The node catalog: every node that ever connected, with its tools and runtime, so the
inventory (and `gsv nodes list`) still knows a node while it is offline."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from gsv_core.storage.db import Database


@dataclass
class NodeRecord:
    node_id: str
    tools: list[dict[str, Any]]
    runtime: dict[str, Any] | None
    platform: str | None
    version: str | None
    first_seen_at: int
    last_seen_at: int
    last_connected_at: int | None
    last_disconnected_at: int | None


_COLUMNS = (
    "node_id, tools, runtime, platform, version, first_seen_at, last_seen_at, "
    "last_connected_at, last_disconnected_at"
)


def _record(row: tuple[Any, ...]) -> NodeRecord:
    return NodeRecord(
        node_id=row[0],
        tools=json.loads(row[1]),
        runtime=json.loads(row[2]) if row[2] else None,
        platform=row[3],
        version=row[4],
        first_seen_at=row[5],
        last_seen_at=row[6],
        last_connected_at=row[7],
        last_disconnected_at=row[8],
    )


class NodeStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def list(self) -> list[NodeRecord]:
        return await self._db.select(_record, f"SELECT {_COLUMNS} FROM nodes ORDER BY node_id")

    async def connected(self, record: NodeRecord) -> None:
        """Upsert a node that just connected (first_seen_at kept from an earlier visit)."""

        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                f"INSERT INTO nodes ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(node_id) DO UPDATE SET tools = excluded.tools, "
                "runtime = excluded.runtime, platform = excluded.platform, "
                "version = excluded.version, last_seen_at = excluded.last_seen_at, "
                "last_connected_at = excluded.last_connected_at",
                (
                    record.node_id,
                    json.dumps(record.tools),
                    json.dumps(record.runtime) if record.runtime is not None else None,
                    record.platform,
                    record.version,
                    record.first_seen_at,
                    record.last_seen_at,
                    record.last_connected_at,
                    record.last_disconnected_at,
                ),
            )

        await self._db.write(write)

    async def disconnected(self, node_id: str, at: int) -> None:
        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE nodes SET last_seen_at = ?, last_disconnected_at = ? WHERE node_id = ?",
                (at, at, node_id),
            )

        await self._db.write(write)

    async def delete(self, node_id: str) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            return conn.execute("DELETE FROM nodes WHERE node_id = ?", (node_id,)).rowcount > 0

        return await self._db.write(write)
