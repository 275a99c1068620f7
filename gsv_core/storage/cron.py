"""Cron jobs and their run history (as `cron.*` shows them). Jobs are stored
in their wire shape as JSON (one row per job); runs get an autoincrement id, newest last,
and each job's history is trimmed to a limit as runs are added."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from typing import Any

from gsv_core.storage.db import Database


class CronStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def jobs(self) -> list[dict[str, Any]]:
        """Every job, oldest first."""

        sql = "SELECT data FROM cron_jobs ORDER BY created_at, id"
        return await self._db.select(lambda row: json.loads(row[0]), sql)

    async def save_job(self, job: Mapping[str, Any]) -> None:
        """Insert or replace a job (a wire-shaped dict, serialised now, not later)."""
        row = (job["id"], job["agentId"], job["createdAtMs"], json.dumps(job))

        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO cron_jobs (id, agent_id, created_at, data) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET agent_id = excluded.agent_id, data = excluded.data",
                row,
            )

        await self._db.write(write)

    async def delete_job(self, job_id: str, *, with_runs: bool) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            if with_runs:
                conn.execute("DELETE FROM cron_runs WHERE job_id = ?", (job_id,))
            return conn.execute("DELETE FROM cron_jobs WHERE id = ?", (job_id,)).rowcount > 0

        return await self._db.write(write)

    async def append_run(self, run: Mapping[str, Any], keep: int) -> int:
        """Record a run (without `id`; the store assigns it) and keep only the job's
        newest `keep` runs. Returns the run id."""
        job_id, ts, status = run["jobId"], run["ts"], run["status"]
        rest = json.dumps({k: v for k, v in run.items() if k not in ("jobId", "ts", "status")})

        def write(conn: sqlite3.Connection) -> int:
            cursor = conn.execute(
                "INSERT INTO cron_runs (job_id, ts, status, data) VALUES (?, ?, ?, ?)",
                (job_id, ts, status, rest),
            )
            conn.execute(
                "DELETE FROM cron_runs WHERE job_id = ? AND id NOT IN "
                "(SELECT id FROM cron_runs WHERE job_id = ? ORDER BY id DESC LIMIT ?)",
                (job_id, job_id, keep),
            )
            return int(cursor.lastrowid or 0)

        return await self._db.write(write)

    async def runs(
        self, job_id: str | None, offset: int, limit: int
    ) -> tuple[list[dict[str, Any]], int]:
        """Runs newest first (of one job, or all), and how many there are in total."""
        where, args = ("WHERE job_id = ?", (job_id,)) if job_id is not None else ("", ())

        def read(conn: sqlite3.Connection) -> tuple[list[dict[str, Any]], int]:
            total = conn.execute(f"SELECT COUNT(*) FROM cron_runs {where}", args).fetchone()[0]
            rows = conn.execute(
                f"SELECT id, job_id, ts, status, data FROM cron_runs {where} "
                "ORDER BY id DESC LIMIT ? OFFSET ?",
                (*args, limit, offset),
            ).fetchall()
            return [_run(row) for row in rows], int(total)

        return await self._db.read(read)


def _run(row: tuple[Any, ...]) -> dict[str, Any]:
    return {"id": row[0], "jobId": row[1], "ts": row[2], "status": row[3], **json.loads(row[4])}
