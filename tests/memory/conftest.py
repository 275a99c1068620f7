"""A real database file and a real workspace folder with the memory index over them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gsv_core.memory.service import MemoryService
from gsv_core.storage.db import Database
from gsv_core.storage.sessions import SessionRecord
from gsv_core.storage.sessions import SessionStore
from gsv_core.workspace.backend import FilesystemBackend
from tests.agent.conftest import client  # noqa: F401  (gateway runs)
from tests.agent.conftest import fake  # noqa: F401  (gateway runs)
from tests.agent.conftest import gw  # noqa: F401  (gateway runs)
from tests.agent.conftest import log  # noqa: F401  (gateway runs)


@dataclass
class Memory:
    db: Database
    service: MemoryService
    store: SessionStore
    workspace: Path  # the workspace folder (agents/<id>/...)

    def note(self, path: str, text: str, agent: str = "main") -> Path:
        target = self.workspace / "agents" / agent / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        return target

    async def say(self, key: str, *texts: str, role: str = "user", at: int = 1000) -> None:
        record = SessionRecord(key, "sid-" + key, "main", "main", 0, 0, 0)
        messages = [message(role, text, at + i) for i, text in enumerate(texts)]
        await self.store.append(record, messages)


def message(role: str, text: str, at: int = 1000) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": text}], "timestamp": at}


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[Memory]:
    db = await Database.open(tmp_path / "gsv.db")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    service = MemoryService(db, FilesystemBackend(workspace))
    try:
        yield Memory(db, service, SessionStore(db, service.index), workspace)
    finally:
        await service.close()
        await db.close()
