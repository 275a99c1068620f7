"""An install from before the memory index: its database at schema 9 with history in it
and an archive in its workspace. The gateway migrates, builds the index in the
background, says so in gateway.status, and then finds the old words."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

from gsv_core.client import GatewayClient
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from gsv_core.storage.db import MIGRATIONS
from gsv_core.storage.db import migrate
from tests.memory.conftest import message


def older_install(data: Path) -> None:
    data.mkdir(parents=True)
    conn = sqlite3.connect(data / "gsv.db", isolation_level=None)
    migrate(conn, MIGRATIONS[:9])
    rows = [("agent:main:main", i, json.dumps(message("user", f"old note {i} about the gazebo")))
            for i in range(3)]  # fmt: skip
    conn.executemany("INSERT INTO messages (session_key, idx, data) VALUES (?, ?, ?)", rows)
    conn.close()
    archive = data / "workspace/agents/main/sessions/old-id.jsonl.gz"
    archive.parent.mkdir(parents=True)
    lines = [{"meta": {"sessionKey": "agent:main:main"}}, message("user", "the gazebo roof leaks")]
    archive.write_bytes(gzip.compress("\n".join(map(json.dumps, lines)).encode()))


async def test_an_older_install_is_indexed_in_the_background(tmp_path: Path) -> None:
    """Migration 10 runs, the build indexes history and archives, search finds them."""
    older_install(tmp_path / "data")
    async with serve(ServerConfig(database=tmp_path / "data" / "gsv.db"), port=0) as gw:
        await gw.gateway.memory.wait_built()
        async with GatewayClient(gw.url, token=gw.token) as client:
            overview = await client.call("gateway.status")
            assert overview["memory"] == {"state": "ready", "done": 2, "total": 2}
            found = await client.call("memory.search", {"query": "gazebo", "limit": 10})
    assert found["count"] == 4
    assert sum(hit["archived"] for hit in found["results"]) == 1
    conn = sqlite3.connect(tmp_path / "data" / "gsv.db")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    assert conn.execute("SELECT value FROM memory_state WHERE key = 'built'").fetchone() == ("1",)
