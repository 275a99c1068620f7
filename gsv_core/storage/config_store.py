"""Persisted gateway config overrides: one row per top-level key."""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any

from gsv_core.storage.db import Database


class ConfigStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def load(self) -> dict[str, Any]:
        def read(conn: sqlite3.Connection) -> dict[str, Any]:
            rows = conn.execute("SELECT key, value FROM config_overrides").fetchall()
            return {key: json.loads(value) for key, value in rows}

        return await self._db.read(read)

    async def save(self, overrides: dict[str, Any], changed_key: str) -> None:
        """Persist the top-level key `changed_key` of `overrides` (deleting it if absent)."""
        value = overrides.get(changed_key)
        now = int(time.time() * 1000)

        def write(conn: sqlite3.Connection) -> None:
            if value is None:
                conn.execute("DELETE FROM config_overrides WHERE key = ?", (changed_key,))
            else:
                conn.execute(
                    "INSERT INTO config_overrides (key, value, updated_at) VALUES (?, ?, ?) "
                    "ON CONFLICT(key) DO UPDATE SET value = excluded.value, "
                    "updated_at = excluded.updated_at",
                    (changed_key, json.dumps(value), now),
                )

        await self._db.write(write)

    async def scrub(self) -> bool:
        """Leave no bytes of replaced values in the database file or its WAL; False when
        the WAL was in use and could not be cleared completely."""
        busy, _, _ = await self._db.scrub()
        return not busy
