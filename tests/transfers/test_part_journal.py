"""Partial files of transfers cut off by a crash are removed at the next start:
the journal of `.part` files in progress, on the gateway and on a node."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from gsv_core.node.daemon import NodeDaemon
from gsv_core.node.daemon import NodeSettings
from gsv_core.paths import resolve_paths
from gsv_core.transfer import PartJournal
from gsv_core.transfer import temp_path
from tests.waiting import until


def test_the_journal_lists_parts_in_progress_and_sweeps_only_parts(tmp_path: Path) -> None:
    journal = PartJournal(tmp_path / "run" / "parts.json")
    part = temp_path(tmp_path / "big.iso", 7)
    part.write_bytes(b"half")
    journal.add(part)
    keep = tmp_path / "notes.txt"  # a hand-edited journal must never delete other files
    keep.write_text("mine")
    listed = json.loads(journal.path.read_text())
    journal.path.write_text(json.dumps([*listed, str(keep), 42]))
    assert journal.sweep() == 1
    assert not part.exists() and keep.read_text() == "mine"
    assert json.loads(journal.path.read_text()) == []
    journal.path.write_text("{not json")
    assert journal.sweep() == 0  # a damaged journal is an empty one


async def test_a_gateway_removes_the_parts_a_crashed_run_left(tmp_path: Path) -> None:
    database = tmp_path / "data" / "gsv.db"
    part = temp_path(database.parent / "workspace" / "agents" / "main" / "x.bin", 3)
    part.parent.mkdir(parents=True)
    part.write_bytes(b"\0" * 1024)
    PartJournal(database.parent / "transfer-parts.json").add(part)  # as the crashed run did
    async with serve(ServerConfig(database=database), port=0):
        assert not part.exists()


async def test_a_node_removes_the_parts_a_crashed_run_left(tmp_path: Path) -> None:
    part = temp_path(tmp_path / "ws" / "movie.mp4", 9)
    part.parent.mkdir()
    part.write_bytes(b"\0" * 1024)
    PartJournal(resolve_paths().run_dir / "parts-n1.json").add(part)
    settings = NodeSettings(url="ws://127.0.0.1:9/ws", node_id="n1", workspace=tmp_path / "ws")
    daemon = NodeDaemon(settings)
    stop = asyncio.Event()
    running = asyncio.create_task(daemon.run(stop))
    await until(lambda: not part.exists(), "the node to remove the part")
    stop.set()
    await asyncio.wait_for(running, 30)
    assert not part.exists()
